#!/usr/bin/env python3
"""Data-parallel training from Python equals one process on the full batch.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_equivalence.py

Checks (every rank runs all of them; rank 0 prints one line per check):
  (a) fluid.MPIExecutor on an mlp (SGD lr 0.1, fixed seed), each rank
      feeding its share of a deterministic global batch of 32, for 20 steps,
      ends with the parameters a single-process fluid.Executor reaches on the
      full batch (relative 1e-5, norm-wise per parameter);
  (b) the seed-style path (default programs, optimizer.minimize,
      DistributeTranspiler().transpile(optimize_ops, params_grads,
      trainers=world), collective mode, trainer program run with
      MPIExecutor) gives the same parameters as (a);
  (c) pserver mode turned into a collective program by
      fluid.transpiler.to_collective gives the same parameters as (b);
  (d) rank and world_size agree with the launcher, and the programs are
      transpiled for world_size ranks;
  (e) fluid.MPIExecutor(allreduce="hier") reaches the parameters of (a)'s
      reference.
Exits non-zero if any check fails (a failing rank other than 0 also says
why on stderr, since rank 0 cannot see it).

    mpirun -np 2 ... mpi_equivalence.py --job J --data D --out O

is the other mode test_mpi.py uses: load the job J (fluid.io.save_job),
train one step on the whole train split of the IDX dir D, rank r feeding
the r-th contiguous share, and save the parameters (rank 0) to O with
fluid.io.save_params.
"""
import argparse
import os
import sys
import traceback

import numpy as np

import fluid

L = fluid.layers
SEED = 7
GLOBAL_BATCH = 32
STEPS = 20
LR = 0.1
RTOL = 1e-5
PSERVERS = "127.0.0.1:6174,127.0.0.1:6175"


def build_mlp():
    """Builds into the current default programs (the seed style); returns
    the loss and minimize's (optimize_ops, params_grads)."""
    fluid.default_main_program().random_seed = SEED
    image = L.data("image", [1, 28, 28])
    label = L.data("label", [1], dtype="int64")
    h = L.fc(image, 64, act="relu")
    h = L.fc(h, 32, act="relu")
    logits = L.fc(h, 10)
    loss = L.mean(L.softmax_with_cross_entropy(logits, label))
    optimize_ops, params_grads = fluid.optimizer.SGD(LR).minimize(loss)
    return loss, optimize_ops, params_grads


def fresh_mlp():
    main, startup = fluid.Program(), fluid.Program()
    # Names from fc_0 in every program built here (the checks read them).
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        loss, optimize_ops, params_grads = build_mlp()
    return main, startup, loss, optimize_ops, params_grads


def global_batch(step):
    """Step `step`'s global batch: noise plus a bright band of rows whose
    position is the label (learnable, so the loss falls)."""
    rng = np.random.RandomState(1000 + step)
    y = rng.randint(0, 10, size=(GLOBAL_BATCH, 1)).astype(np.int64)
    x = rng.rand(GLOBAL_BATCH, 1, 28, 28).astype(np.float32) * 0.3
    for i, label in enumerate(y[:, 0]):
        x[i, 0, 2 * label + 4:2 * label + 7, :] += 0.7
    return x, y


def shard(arrays, rank, world):
    n = len(arrays[0])
    assert n % world == 0, f"global batch {n} does not split over {world}"
    per = n // world
    return [a[rank * per:(rank + 1) * per] for a in arrays]


def param_names(program):
    return sorted(v["name"] for v in program.desc.vars()
                  if v["persistable"] and v["trainable"])


def params_of(scope, names):
    return {n: np.array(scope.get(n), copy=True) for n in names}


def compare(got, want, rtol=RTOL):
    """'' if every parameter is within rtol (norm-wise), else the worst."""
    worst, worst_name = 0.0, None
    for n in want:
        if n not in got:
            return f"{n} missing"
        if got[n].shape != want[n].shape:
            return f"{n}: shape {got[n].shape} vs {want[n].shape}"
        den = max(np.linalg.norm(want[n]), 1e-30)
        rel = float(np.linalg.norm(got[n].astype(np.float64) - want[n]) / den)
        if not np.isfinite(rel) or rel > worst:
            worst, worst_name = rel, n
        if not np.isfinite(rel):
            return f"{n}: not finite"
    if worst > rtol:
        return f"{worst_name}: relative difference {worst:.3g} > {rtol:g}"
    return ""


def max_rel(got, want):
    return max(float(np.linalg.norm(got[n].astype(np.float64) - want[n]) /
                     max(np.linalg.norm(want[n]), 1e-30)) for n in want)


# Set by --only: the letters of the checks to run (all when empty).
ONLY = ""


def run_startup(exe, startup, scope):
    exe.run(startup, scope=scope)


def train_mpi(exe, main, startup, loss, rank, world, scope):
    run_startup(exe, startup, scope)
    losses = []
    for step in range(STEPS):
        x, y = shard(global_batch(step), rank, world)
        (l,) = exe.run(main, feed={"image": x, "label": y},
                       fetch_list=[loss], scope=scope)
        losses.append(float(l[0]))
    return losses


# ---- the checks ----

class Checks:
    def __init__(self, rank, world):
        self.rank, self.world = rank, world
        self.failed = []
        self.count = 0

    def say(self, line):
        if self.rank == 0:
            print(line, flush=True)

    def check(self, name, fn):
        if ONLY and name[1] not in ONLY:
            return
        self.count += 1
        try:
            problem = fn()
        except Exception:  # noqa: BLE001 - report and fail the check
            problem = "raised:\n" + traceback.format_exc()
        if problem and problem.startswith("OK"):
            self.say(f"PASS {name}: {problem[2:].strip()}")
        elif problem:
            self.failed.append(name)
            self.say(f"FAIL {name}: {problem}")
            if self.rank != 0:
                print(f"rank {self.rank}: FAIL {name}: {problem}",
                      file=sys.stderr, flush=True)
        else:
            self.say(f"PASS {name}")


def equals_one_process(exe, build, train, keep, rtol=1e-6):
    """A check of the scripts that train a model (build() -> main, startup,
    loss; train(exe, main, startup, loss, scope, rank=0, world=1)) with
    `exe`, a fluid.MPIExecutor, each rank on its share: the parameters
    equal those a fluid.Executor reaches on the full batch (rtol), and
    every persistable is bitwise identical across ranks. `keep` holds the
    scopes (they outlive the executors bound to them)."""
    main, startup, loss = build()
    names = param_names(main)
    ref_scope = fluid.Scope()
    keep.append(ref_scope)
    ref = fluid.Executor(fluid.CPUPlace())
    train(ref, main, startup, loss, ref_scope)
    want = params_of(ref_scope, names)
    del ref
    scope = fluid.Scope()
    keep.append(scope)
    train(exe, main, startup, loss, scope, exe.rank, exe.world_size)
    exe.check_consistency()  # every persistable, bitwise
    got = params_of(scope, names)
    bad = compare(got, want, rtol=rtol)
    return bad or f"OK max relative difference {max_rel(got, want):.2e}"


def feed_trainer(feed_of, steps):
    """train(exe, main, startup, loss, scope, rank=0, world=1) for
    equals_one_process: the startup, then `steps` steps, each feeding
    feed_of(step, rank, world), this rank's share of the step's batch."""
    def train(exe, main, startup, loss, scope, rank=0, world=1):
        exe.run(startup, scope=scope)
        for step in range(steps):
            exe.run(main, feed=feed_of(step, rank, world), fetch_list=[loss],
                    scope=scope)
    return train


def image_feed(step, rank=0, world=1):
    """This rank's share of global_batch(step) as "image" and "label"."""
    x, y = global_batch(step)
    if world > 1:
        x, y = shard((x, y), rank, world)
    return {"image": x, "label": y}


def image_trainer(steps):
    """feed_trainer on global_batch's images and labels."""
    return feed_trainer(image_feed, steps)


def sequence_feed(step, rank, world, seqs, width, state):
    """This rank's sequences [rank * seqs / world, ...) of step's global
    batch of `seqs` sequences (1 to 5 rows of `width`) as "x" (a LoD
    tensor), with "h0" [.., state] and 3-class "label" per sequence."""
    rs = np.random.RandomState(100 + step)
    lengths = rs.randint(1, 6, seqs)
    x = rs.uniform(-1, 1, (lengths.sum(), width)).astype("float32")
    h0 = rs.uniform(-1, 1, (seqs, state)).astype("float32")
    label = rs.randint(0, 3, (seqs, 1)).astype("int64")
    per = seqs // world
    lo, hi = rank * per, (rank + 1) * per
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return {"x": fluid.create_lod_tensor(x[offsets[lo]:offsets[hi]],
                                         [lengths[lo:hi].tolist()]),
            "h0": h0[lo:hi], "label": label[lo:hi]}


def summary(c):
    """Rank 0's closing line of checks `c`; the script's exit status."""
    c.say(f"{len(c.failed)} of {c.count} checks failed" if c.failed
          else f"all {c.count} checks passed on {c.world} rank(s)")
    return 1 if c.failed else 0


def script_main(run):
    """Runs a check script's `run()` and exits with its status; an
    exception ends the process at once (the other ranks' collectives would
    wait for it otherwise)."""
    try:
        rc = run()
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()
    sys.exit(rc)


def run_checks():
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    rank, world = exe.rank, exe.world_size
    c = Checks(rank, world)
    results = {}

    # Reference: one process, full global batch, plain Executor.
    main, startup, loss, _, _ = fresh_mlp()
    names = param_names(main)
    ref_scope = fluid.Scope()
    ref = fluid.Executor(fluid.CPUPlace())
    ref.run(startup, scope=ref_scope)
    ref_losses = []
    for step in range(STEPS):
        x, y = global_batch(step)
        (l,) = ref.run(main, feed={"image": x, "label": y},
                       fetch_list=[loss], scope=ref_scope)
        ref_losses.append(float(l[0]))
    want = params_of(ref_scope, names)
    del ref  # before ref_scope, which it is bound to

    def check_a():
        scope = fluid.Scope()
        results["a_scope"] = scope  # outlives the executor (see below)
        losses = train_mpi(exe, main, startup, loss, rank, world, scope)
        exe.check_consistency()
        got = params_of(scope, names)
        results["a"] = got
        transpiled = exe.transpiled_program(main)
        if world > 1 and "c_allreduce" not in transpiled.op_types():
            return "the program MPIExecutor ran has no c_allreduce"
        if not all(np.isfinite(losses)):
            return f"losses not finite: {losses}"
        if not ref_losses[-1] < ref_losses[0]:
            return f"reference loss did not decrease: {ref_losses}"
        bad = compare(got, want)
        return bad or (f"OK max relative difference {max_rel(got, want):.2e}"
                       f" over {len(names)} params; loss "
                       f"{ref_losses[0]:.4f} -> {ref_losses[-1]:.4f}")

    def check_b():
        # The seed's script, with fluid.MPIExecutor for fluid.Executor.
        fluid.reset_default_programs()
        loss_b, optimize_ops, params_grads = build_mlp()
        t = fluid.DistributeTranspiler()
        t.transpile(optimize_ops, params_grads, trainers=world)
        trainer = t.get_trainer_program()
        if world > 1 and "c_allreduce" not in trainer.op_types():
            return "trainer program has no c_allreduce"
        scope = fluid.Scope()
        results["b_scope"] = scope
        exe_b = fluid.MPIExecutor(fluid.CPUPlace())
        results["b_exe"] = exe_b
        train_mpi(exe_b, trainer, t.get_startup_program(), loss_b, rank,
                  world, scope)
        exe_b.check_consistency()
        got = params_of(scope, names)
        results["b"] = got
        if "a" in results:
            bad = compare(got, results["a"])
            if bad:
                return "vs (a): " + bad
        bad = compare(got, want)
        return ("vs one process: " + bad) if bad else (
            f"OK max relative difference to (a) "
            f"{max_rel(got, results.get('a', want)):.2e}, to one process "
            f"{max_rel(got, want):.2e}")

    def check_c():
        main_c, startup_c, loss_c, optimize_ops, params_grads = fresh_mlp()
        t = fluid.DistributeTranspiler()
        t.transpile(optimize_ops, params_grads, pservers=PSERVERS,
                    trainers=world, program=main_c,
                    startup_program=startup_c, mode="pserver")
        trainer = t.get_trainer_program()
        if "send" not in trainer.op_types():
            return "pserver-mode trainer program has no send"
        m, s = fluid.transpiler.to_collective(
            trainer, t, t.get_startup_program(), world)
        scope = fluid.Scope()
        results["c_scope"] = scope
        exe_c = fluid.MPIExecutor(fluid.CPUPlace())
        results["c_exe"] = exe_c
        train_mpi(exe_c, m, s, loss_c, rank, world, scope)
        exe_c.check_consistency()
        got = params_of(scope, names)
        want_c = results.get("b", results.get("a", want))
        bad = compare(got, want_c)
        return bad or (f"OK max relative difference to collective mode "
                       f"{max_rel(got, want_c):.2e}")

    def check_d():
        env_size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
        env_rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
        if (rank, world) != (env_rank, env_size):
            return (f"MPIExecutor says rank {rank} of {world}, the launcher "
                    f"rank {env_rank} of {env_size}")
        if not 0 <= rank < world:
            return f"rank {rank} out of range for world {world}"
        nranks = exe.transpiled_program(main).desc.nranks
        if world > 1 and nranks != world:
            return f"program transpiled for {nranks} ranks, world is {world}"
        return f"OK rank {rank} of {world}"

    def check_e():
        # Hierarchical allreduce: within each host, then between hosts.
        hier = fluid.MPIExecutor(fluid.CPUPlace(), allreduce="hier")
        results["e_exe"] = hier
        scope = fluid.Scope()
        results["e_scope"] = scope
        train_mpi(hier, main, startup, loss, rank, world, scope)
        hier.check_consistency()
        got = params_of(scope, names)
        bad = compare(got, want)
        return bad or (f"OK max relative difference "
                       f"{max_rel(got, want):.2e}")

    c.check("(a) MPIExecutor == Executor on the full batch", check_a)
    c.check("(b) seed-style DistributeTranspiler collective == (a)", check_b)
    c.check("(c) pserver mode + to_collective == collective mode", check_c)
    c.check("(d) rank and world_size", check_d)
    c.check("(e) MPIExecutor(allreduce='hier') == Executor", check_e)
    # Executors first, then the scopes they ran on (the executors hold
    # their scopes, so either order is safe; this one is the natural one).
    results.pop("b_exe", None)
    results.pop("e_exe", None)
    results.pop("c_exe", None)
    exe = None  # noqa: F841 - frees the executor (a closure cell)
    results.clear()
    c.say(f"{len(c.failed)} of {c.count} checks failed" if c.failed
          else f"all {c.count} checks passed on {world} rank(s)")
    return 1 if c.failed else 0


def run_job(job_path, data_dir, out_dir):
    """One step of a saved job on the whole train split, sharded by rank."""
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    rank, world = exe.rank, exe.world_size
    job = fluid.io.load_job(job_path)
    x, y = fluid.datasets.fashion_mnist.train(data_dir)
    bx, by = shard((x, y), rank, world)
    scope = fluid.Scope()
    exe.run(job["startup"], scope=scope)
    feed = dict(zip(job["feeds"], (bx, by)))
    (l,) = exe.run(job["main"], feed=feed, fetch_list=[job["loss"]],
                   scope=scope)
    exe.check_consistency()
    if rank == 0:
        fluid.io.save_params(exe, out_dir, job["main"], scope=scope, step=1,
                             epoch=1)
        print(f"rank 0 of {world}: loss {float(l[0]):.6f}; saved {out_dir}",
              flush=True)
    del exe
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--job")
    ap.add_argument("--data")
    ap.add_argument("--out")
    ap.add_argument("--only", default="",
                    help="letters of the checks to run, e.g. bc")
    a = ap.parse_args()
    global ONLY
    ONLY = a.only
    try:
        if a.job:
            rc = run_job(a.job, a.data, a.out)
        else:
            rc = run_checks()
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.stderr.flush()
        # Leave at once: the other ranks may wait in a collective for this
        # one, and mpirun ends them when a rank exits non-zero.
        os._exit(1)
    sys.stdout.flush()
    sys.exit(rc)


if __name__ == "__main__":
    main()
