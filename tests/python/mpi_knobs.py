#!/usr/bin/env python3
"""Training knobs under data parallelism equal one process on the full
batch.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_knobs.py

Checks (every rank runs all of them; rank 0 prints one line per check):
  (a) an mlp trained with Momentum on an exponential_decay learning rate,
      L2Decay for every parameter but the first weight, which has a
      ParamAttr L1Decay, and GradientClipByGlobalNorm, each rank
      feeding its share of the global batch of 32 for 20 steps, ends with
      the parameters one fluid.Executor reaches on the full batch (relative
      1e-5, norm-wise), and every persistable (parameters, velocities, the
      step counter) is bitwise identical on all ranks; the clip was active;
  (b) the same with Adagrad, L2Decay and GradientClipByValue (no L1:
      Adagrad normalises the flips of sign(param) near 0, so L1 with
      Adagrad turns rounding differences into visible ones);
  (c) in the program MPIExecutor ran, every clip and weight-decay op that
      reads a gradient comes after that gradient's c_wait.
Exits non-zero if any check fails.
"""

import numpy as np

import fluid
from mpi_equivalence import (GLOBAL_BATCH, Checks, compare, global_batch,
                             max_rel, param_names, params_of, script_main,
                             shard, summary)

L = fluid.layers
SEED = 11
STEPS = 20
CLIP_NORM = 0.05


def build(kind):
    """An mlp with the knobs of check `kind` ("a" or "b") in fresh
    programs; returns main, startup, loss and the global norm var (or
    None)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = SEED
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        image = L.data("image", [1, 28, 28])
        label = L.data("label", [1], dtype="int64")
        first = None
        if kind == "a":
            first = fluid.ParamAttr(
                regularizer=fluid.regularizer.L1Decay(1e-4))
        h = L.fc(image, 64, act="relu", param_attr=first)
        h = L.fc(h, 32, act="relu")
        logits = L.fc(h, 10)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        if kind == "a":
            fluid.clip.set_gradient_clip(
                fluid.clip.GradientClipByGlobalNorm(CLIP_NORM))
            opt = fluid.optimizer.Momentum(
                L.exponential_decay(0.1, 5, 0.5, staircase=True), 0.9,
                regularization=fluid.regularizer.L2Decay(1e-3))
        else:
            fluid.clip.set_gradient_clip(
                fluid.clip.GradientClipByValue(0.01))
            opt = fluid.optimizer.Adagrad(
                0.01, regularization=fluid.regularizer.L2Decay(1e-3))
        opt.minimize(loss)
    norm = [v["name"] for v in main.desc.vars()
            if v["name"].startswith("global_norm_default_group")
            and "@" not in v["name"]]
    return main, startup, loss, (norm[0] if norm else None)


def train(exe, main, startup, loss, scope, rank=0, world=1, fetch=None):
    exe.run(startup, scope=scope)
    fetched = []
    for step in range(STEPS):
        x, y = global_batch(step)
        if world > 1:
            x, y = shard((x, y), rank, world)
        out = exe.run(main, feed={"image": x, "label": y},
                      fetch_list=[loss] + ([fetch] if fetch else []),
                      scope=scope)
        fetched.append([float(np.asarray(o).reshape(-1)[0]) for o in out])
    return fetched


def run_checks():
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    rank, world = exe.rank, exe.world_size
    assert GLOBAL_BATCH % world == 0
    c = Checks(rank, world)
    keep = []  # scopes outlive the executors bound to them

    def equivalence(kind):
        main, startup, loss, norm = build(kind)
        names = param_names(main)
        ref_scope = fluid.Scope()
        keep.append(ref_scope)
        ref = fluid.Executor(fluid.CPUPlace())
        ref_out = train(ref, main, startup, loss, ref_scope, fetch=norm)
        want = params_of(ref_scope, names)
        del ref
        scope = fluid.Scope()
        keep.append(scope)
        out = train(exe, main, startup, loss, scope, rank, world, fetch=norm)
        exe.check_consistency()  # every persistable, bitwise
        if kind == "a":
            counter = np.asarray(scope.get("@LR_DECAY_COUNTER@")).reshape(-1)
            if counter[0] != STEPS - 1:
                return f"step counter {counter[0]}, want {STEPS - 1}"
        if norm is not None:
            if not ref_out[0][1] > CLIP_NORM:
                return f"global norm {ref_out[0][1]} never clipped"
            if abs(out[0][1] - ref_out[0][1]) > 1e-5 * ref_out[0][1]:
                return (f"global norm {out[0][1]} on rank {rank}, "
                        f"{ref_out[0][1]} in one process")
        bad = compare(params_of(scope, names), want)
        return bad or (f"OK max relative difference "
                       f"{max_rel(params_of(scope, names), want):.2e}; loss "
                       f"{ref_out[0][0]:.4f} -> {ref_out[-1][0]:.4f}")

    def order():
        main, startup, loss, _ = build("a")
        scope = fluid.Scope()
        keep.append(scope)
        train(exe, main, startup, loss, scope, rank, world)
        ops = exe.transpiled_program(main).ops()
        if world == 1:
            return "OK one rank: nothing to order"
        waited, fused_of, checked = set(), {}, 0
        for op in ops:
            if op["type"] == "coalesce_tensor":
                for g in op["outputs"]["Output"]:
                    fused_of[g] = op["outputs"]["FusedOutput"][0]
            if op["type"] == "c_wait":
                waited.update(op["outputs"]["Out"])
            if op["type"] in ("squared_l2_norm", "elementwise_mul", "sum",
                              "momentum") and "optimize" in op["roles"]:
                for names in op["inputs"].values():
                    for n in names:
                        if n in fused_of:
                            checked += 1
                            if fused_of[n] not in waited:
                                return (f"{op['type']} reads {n} before its "
                                        "c_wait")
        return f"OK {checked} gradient reads after their c_wait"

    c.check("(a) Momentum + exponential_decay + L2Decay + ParamAttr L1Decay "
            "+ global-norm clip == Executor, ranks bitwise equal",
            lambda: equivalence("a"))
    c.check("(b) Adagrad + L2Decay + clip by value == Executor",
            lambda: equivalence("b"))
    c.check("(c) clip and decay ops read gradients after their c_wait",
            order)
    exe = None  # noqa: F841 - the executor goes before the scopes
    return summary(c)


if __name__ == "__main__":
    script_main(run_checks)
