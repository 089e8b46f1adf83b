#!/usr/bin/env python3
"""Scripts for test_executor_fixes.py, run under mpirun (or alone, a world
of one); each mode checks what it is about with asserts and prints
"ok: MODE" on every rank at its end.

    mpi_executor_fixes.py free
    mpi_executor_fixes.py stall OUT
    mpi_executor_fixes.py return_numpy
    mpi_executor_fixes.py checkpoint OUT
    mpi_executor_fixes.py resume CHECKPOINT

free: executors and their scopes dropped in every order (a function's
end, `del` either way round, a reference cycle, the end of the script)
after a step of a plain, a sharded and an unsharded job; the process must
exit normally.

stall: the stall settings an MPIExecutor is given survive the MPIExecutors
made inside a CompiledProgram and a ParallelExecutor: rank 1 then sleeps
in a step and the job ends by the stall timeout the script set, writing
the flight recorder into the directory it set.

return_numpy: return_numpy=False gives fluid.LoDTensors on the
data-parallel CompiledProgram paths (a plain Executor's, an
MPIExecutor's) and ParallelExecutor's.

checkpoint: K steps with sharded optimizer state, then fluid.io's saves
on every rank (rank 0 writes): the checkpoint is bitwise the one an
unsharded job writes, and a sharded or unsharded MPIExecutor resuming it
(loading before or after its first run) continues bitwise as the
uninterrupted job does; fleet.save_persistables and a CompiledProgram's
job save the whole state too; save_params needs rank 0 only; a failed
write raises on every rank.

resume: the checkpoint that `checkpoint` wrote at another number of ranks
resumes in a sharded and an unsharded MPIExecutor, loaded before or after
the first run, and in a plain Executor: M steps on each give the same
parameters (the plain Executor's to 1e-5: its sums run in another order),
and they differ from M steps with the parameters alone (fresh optimizer
state)."""
import gc
import os
import sys
import time

import numpy as np

import fluid
from fluid.incubate.fleet.base import role_maker
from fluid.incubate.fleet.collective import DistributedStrategy, fleet
from fluid1x_common import GLOBAL_BATCH, global_batch, rank_and_world

K = 3  # steps before the checkpoint
M = 3  # steps after it
RANK, WORLD = rank_and_world()
# The plain Executors here train (or evaluate) on their own, knowingly.
os.environ["FLUID_INDEPENDENT_RANKS"] = "1"


def build(optimizer=None):
    """(main, startup, loss): a small classifier trained by Adam."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 3
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[16], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="int64")
        hidden = fluid.layers.fc(input=x, size=8, act="relu")
        predict = fluid.layers.fc(input=hidden, size=4, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(predict, y))
        (optimizer or fluid.optimizer.Adam(learning_rate=0.05)).minimize(
            loss)
    return main, startup, loss


def feed(step, world=WORLD, rank=RANK):
    """This rank's contiguous share of step `step`'s global batch."""
    x, y = global_batch(step)
    per = GLOBAL_BATCH // world
    return {"x": x[rank * per:(rank + 1) * per],
            "y": y[rank * per:(rank + 1) * per]}


def strategy(sharded):
    s = fluid.DistributedStrategy()
    s.sharding = sharded
    return s


def persistables(main, scope):
    return {v.name: np.array(scope.find_var(v.name).get_tensor())
            for v in main.list_vars() if v.persistable}


def parameters(main, scope):
    return {p.name: np.array(scope.find_var(p.name).get_tensor())
            for p in main.all_parameters()}


def same(a, b, what):
    assert sorted(a) == sorted(b), (what, sorted(a), sorted(b))
    for k in a:
        assert a[k].tobytes() == b[k].tobytes(), \
            f"{what}: {k} differs: max |diff| {np.abs(a[k] - b[k]).max()}"


def barrier():
    """Every rank waits for all (after rank 0 wrote files)."""
    fluid.incubate.fleet.collective._barrier()


class Job:
    """One training job on its own scope: an MPIExecutor (or a plain
    Executor with plain=True) that ran the startup program."""

    def __init__(self, sharded=False, plain=False):
        self.main, self.startup, self.loss = build()
        self.scope = fluid.Scope()
        self.exe = fluid.Executor(fluid.CPUPlace()) if plain else \
            fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy(sharded))
        self.exe.run(self.startup, scope=self.scope)

    def train(self, first, steps, whole_batch=False):
        for step in range(first, first + steps):
            self.exe.run(self.main, scope=self.scope, fetch_list=[self.loss],
                         feed=feed(step, 1, 0) if whole_batch
                         else feed(step))
        return self

    def save(self, dirname):
        fluid.io.save_persistables(self.exe, dirname, self.main,
                                   scope=self.scope)

    def load(self, dirname, what=fluid.io.load_persistables):
        what(self.exe, dirname, self.main, scope=self.scope)
        return self


# ---- free ----

def step_and_leave(kind):
    """A job of `kind` takes a step; everything is freed at the return."""
    if kind == "plain":
        Job(plain=True).train(0, 1, whole_batch=True)
    else:
        Job(sharded=kind == "sharded").train(0, 1)


def free():
    for kind in ("plain", "sharded", "unsharded"):
        step_and_leave(kind)
        job = Job(sharded=kind == "sharded", plain=kind == "plain")
        job.train(0, 1, whole_batch=kind == "plain")
        exe, scope = job.exe, job.scope
        del job
        del scope  # the scope before its executor
        del exe
        gc.collect()
        job = Job(sharded=kind == "sharded", plain=kind == "plain")
        job.train(0, 1, whole_batch=kind == "plain")
        exe, scope = job.exe, job.scope
        del job
        del exe  # the executor before its scope
        del scope
        gc.collect()
        job = Job(sharded=kind == "sharded", plain=kind == "plain")
        job.train(0, 1, whole_batch=kind == "plain")
        job.cycle = job  # only the collector frees it, in its own order
        del job
        gc.collect()
    # CompiledProgram's internal MPIExecutor, freed with everything else.
    main, startup, loss = build()
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    build_strategy = fluid.BuildStrategy()
    build_strategy.reduce_strategy = fluid.BuildStrategy.ReduceStrategy.Reduce
    compiled = fluid.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, build_strategy=build_strategy)
    exe.run(compiled, feed=feed(0), fetch_list=[loss], scope=scope)
    del scope, compiled
    gc.collect()
    # Left to the end of the script: a sharded job in the module's globals.
    globals()["left_at_exit"] = Job(sharded=True).train(0, 1)


# ---- stall ----

def stall(out):
    fluid.MPIExecutor(fluid.CPUPlace(), stall_warn=0.5, stall_timeout=2,
                      flight_dir=out)
    main, startup, loss = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    compiled = fluid.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name)
    exe.run(compiled, feed=feed(0), fetch_list=[loss])
    pe = fluid.ParallelExecutor(False, loss_name=loss.name, main_program=main)
    pe.run([loss], feed=feed(1))
    print(f"rank {RANK}: internal executors made", flush=True)
    if RANK == 1:
        time.sleep(60)  # the job ends before, by the stall timeout
    pe.run([loss], feed=feed(2))
    print(f"rank {RANK}: the job went on past the stall timeout", flush=True)


# ---- return_numpy ----

def return_numpy():
    main, startup, loss = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    compiled = fluid.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name)
    got = [exe.run(compiled, feed=feed(0), fetch_list=[loss],
                   return_numpy=False)[0]]
    mpi = fluid.MPIExecutor(fluid.CPUPlace())
    main2, startup2, loss2 = build()
    scope = fluid.Scope()
    mpi.run(startup2, scope=scope)
    compiled2 = fluid.CompiledProgram(main2).with_data_parallel(
        loss_name=loss2.name)
    got.append(mpi.run(compiled2, feed=feed(0), fetch_list=[loss2],
                       scope=scope, return_numpy=False)[0])
    pe = fluid.ParallelExecutor(False, loss_name=loss.name, main_program=main)
    got.append(pe.run([loss], feed=feed(1), return_numpy=False)[0])
    for value in got:
        assert isinstance(value, fluid.LoDTensor), type(value)
        assert value.lod() == [] and np.array(value).shape == (1,)
    numpy = exe.run(compiled, feed=feed(2), fetch_list=[loss])[0]
    assert isinstance(numpy, np.ndarray), type(numpy)


# ---- checkpoint ----

def checkpoint(out):
    sharded = Job(sharded=True).train(0, K)
    sharded.save(os.path.join(out, "sharded"))
    unsharded = Job(sharded=False).train(0, K)
    if RANK == 0:
        unsharded.save(os.path.join(out, "unsharded"))
    barrier()
    # Both checkpoints are whole, and the same.
    loaded = {}
    for name in ("sharded", "unsharded"):
        plain = Job(plain=True).load(os.path.join(out, name))
        loaded[name] = persistables(plain.main, plain.scope)
    same(loaded["sharded"], loaded["unsharded"], "checkpoints")
    for k, v in loaded["sharded"].items():
        assert np.abs(v).max() > 0, f"{k} is all zeros in the checkpoint"
    assert any("moment" in k for k in loaded["sharded"])
    # Resumed jobs continue as the uninterrupted one does.
    sharded.train(K, M)
    expected = parameters(sharded.main, sharded.scope)
    ckpt = os.path.join(out, "sharded")
    for name, job in resumed_jobs(ckpt):
        same(parameters(job.main, job.scope), expected, name)
    unsharded.train(K, M)
    same(parameters(unsharded.main, unsharded.scope), expected,
         "the unsharded job")
    save_params_on_rank_0(sharded, out)
    fleet_and_compiled(out, loaded["sharded"])
    failed_write(sharded, out)


def resumed_jobs(ckpt):
    """[(what, job)]: M steps after resuming `ckpt` in each way an
    MPIExecutor does."""
    jobs = []
    for sharded in (True, False):
        jobs.append((f"sharded={sharded}, loaded before the first run",
                     Job(sharded=sharded).load(ckpt).train(K, M)))
    # Loaded after a first run: every rank loads; rank 0's values, and its
    # shards of the optimizer state, go to every rank.
    job = Job(sharded=True).train(0, 1).load(ckpt).train(K, M)
    jobs.append(("sharded, loaded after a first run", job))
    return jobs


def save_params_on_rank_0(job, out):
    """save_params saves no sharded state: rank 0 alone saves."""
    if RANK == 0:
        fluid.io.save_params(job.exe, os.path.join(out, "params"), job.main,
                             scope=job.scope)
    barrier()
    plain = Job(plain=True).load(os.path.join(out, "params"),
                                 fluid.io.load_params)
    same(parameters(plain.main, plain.scope),
         parameters(job.main, job.scope), "save_params")


def fleet_and_compiled(out, reference):
    """Fleet with reduce_strategy Reduce (sharding under mpirun), and a
    CompiledProgram with it run by a plain Executor, then fluid.io's save
    with that Executor: whole checkpoints, the same as `reference`."""
    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    s = DistributedStrategy()
    s.reduce_strategy = fluid.BuildStrategy.ReduceStrategy.Reduce
    main, startup, loss = build(fleet.distributed_optimizer(
        fluid.optimizer.Adam(learning_rate=0.05), strategy=s))
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(fleet.startup_program)
        for step in range(K):
            exe.run(fleet.main_program, feed=feed(step), fetch_list=[loss])
        fleet.save_persistables(exe, os.path.join(out, "fleet"))
        fluid.io.save_persistables(exe, os.path.join(out, "compiled"),
                                   fleet.main_program)
    barrier()
    for name in ("fleet", "compiled"):
        plain = Job(plain=True).load(os.path.join(out, name))
        same(persistables(plain.main, plain.scope), reference, name)


def failed_write(job, out):
    """A checkpoint rank 0 cannot write raises on every rank."""
    blocker = os.path.join(out, "a-file")
    if RANK == 0:
        with open(blocker, "w") as f:
            f.write("x")
    barrier()
    try:
        job.save(os.path.join(blocker, "ckpt"))
    except OSError as e:
        message = str(e)
    else:
        raise AssertionError("a save into a regular file did not fail")
    if RANK != 0:
        assert "rank 0 could not write it" in message, message


# ---- resume ----

def resume(ckpt):
    """`ckpt`, written at another number of ranks, resumes alike in every
    executor."""
    jobs = resumed_jobs(ckpt)
    expected = parameters(jobs[0][1].main, jobs[0][1].scope)
    for name, job in jobs[1:]:
        same(parameters(job.main, job.scope), expected, name)
    plain = Job(plain=True).load(ckpt).train(K, M, whole_batch=True)
    for k, v in parameters(plain.main, plain.scope).items():
        assert np.allclose(v, expected[k], rtol=1e-5, atol=1e-6), \
            (k, np.abs(v - expected[k]).max())
    fresh = Job(sharded=True).load(ckpt, fluid.io.load_params).train(K, M)
    moved = max(np.abs(v - expected[k]).max()
                for k, v in parameters(fresh.main, fresh.scope).items())
    assert moved > 1e-4, \
        f"the optimizer state changed nothing ({moved}): was it resumed?"


def main():
    mode = sys.argv[1]
    if mode == "free":
        free()
    elif mode == "stall":
        stall(sys.argv[2])
    elif mode == "return_numpy":
        return_numpy()
    elif mode == "checkpoint":
        checkpoint(sys.argv[2])
    elif mode == "resume":
        resume(sys.argv[2])
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(f"rank {RANK}: ok: {mode}", flush=True)


if __name__ == "__main__":
    main()
