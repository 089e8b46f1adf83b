"""Run under `mpirun -np N` by test_mpi_stage3_python.py:
    mpi_stage3_python.py STAGE

fluid.MPIExecutor with sharding stage STAGE (2 or 3) on a small Adam MLP:

1. the measured peak of tensor memory over steps 2-4 (after the first
   step, which lays the state out in shards) is within 10% of
   fluid.memory_plan's total for the same program, strategy, rank count
   and batch; the peak of the startup and the first step exceeds that
   plan by the whole parameters at most (the startup leaves the
   optimizer's accumulators to the shards);
2. (stage 3) an evaluation program run between steps is refused with a
   ValueError naming `gathered_parameters`; inside `with
   exe.gathered_parameters():` rank 0 evaluates, and its loss equals an
   unsharded job's on the same seed and batches (1e-6 relative); a
   training step inside the block is refused; training goes on after it.
Prints "all checks passed on N rank(s)" on rank 0."""
import sys

import numpy as np

import fluid

BATCH = 8  # per rank


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 7
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("x", [64])
        y = fluid.layers.data("y", [1], dtype="int64")
        h = fluid.layers.fc(x, 256, act="relu")
        h = fluid.layers.fc(h, 256, act="relu")
        logits = fluid.layers.fc(h, 10)
        loss = fluid.layers.mean(
            fluid.layers.softmax_with_cross_entropy(logits, y))
        test = main.clone(for_test=True)
        fluid.optimizer.Adam(learning_rate=1e-3).minimize(loss)
    return main, startup, test, loss


def batch(step, rank, world):
    rng = np.random.RandomState(100 + step)
    x = rng.rand(BATCH * world, 64).astype("float32")
    y = rng.randint(0, 10, (BATCH * world, 1)).astype("int64")
    part = slice(rank * BATCH, (rank + 1) * BATCH)
    return {"x": x[part], "y": y[part]}


def strategy(stage):
    s = fluid.DistributedStrategy()
    if stage:
        s.sharding = True
        s.sharding_configs = {"stage": stage}
    return s


def check_memory(stage):
    main, startup, _, loss = build()
    exe = fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy(stage))
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    for step in range(4):
        exe.run(main, feed=batch(step, exe.rank, exe.world_size),
                fetch_list=[loss], scope=scope)
        if step == 0:
            first = fluid.memory.max_memory_allocated()
            fluid.memory.reset_max_memory_allocated()
    measured = fluid.memory.max_memory_allocated()
    plan = fluid.memory_plan(main, strategy(stage), exe.world_size, BATCH,
                             startup_program=startup)
    ratio = measured / plan["total"]
    assert 0.9 < ratio < 1.1, (stage, measured, str(plan))
    # The startup makes the parameters whole (the first step shards them)
    # but Adam's moments only as shards: never the whole unsharded state.
    params = sum(4 * int(np.prod(v["shape"])) for v in startup.desc.vars()
                 if v["trainable"])
    assert first <= plan["total"] + params, (first, params, str(plan))
    return exe, ratio


def evaluate(exe, test, loss, scope):
    data = batch(99, 0, 1)
    return float(np.asarray(exe.run(test, feed=data, fetch_list=[loss],
                                    scope=scope)[0]).reshape(-1)[0])


def train_and_evaluate(stage, exe):
    main, startup, test, loss = build()
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    for step in range(3):
        exe.run(main, feed=batch(step, exe.rank, exe.world_size),
                fetch_list=[loss], scope=scope)
    if stage == 3:
        try:
            evaluate(exe, test, loss, scope)
            raise AssertionError("stage 3: an evaluation without gathered "
                                 "parameters ran")
        except ValueError as e:
            assert "gathered_parameters" in str(e), str(e)
    value = None
    with exe.gathered_parameters():
        if exe.rank == 0:
            value = evaluate(exe, test, loss, scope)
        try:
            exe.run(main, feed=batch(3, exe.rank, exe.world_size),
                    fetch_list=[loss], scope=scope)
            raise AssertionError("a training step ran inside "
                                 "gathered_parameters()")
        except ValueError as e:
            assert "leave the block first" in str(e), str(e)
    exe.run(main, feed=batch(3, exe.rank, exe.world_size),  # goes on
            fetch_list=[loss], scope=scope)
    return value


def main():
    stage = int(sys.argv[1])
    exe, ratio = check_memory(stage)
    if stage == 3:
        sharded = train_and_evaluate(3, exe)
        plain = train_and_evaluate(
            0, fluid.MPIExecutor(fluid.CPUPlace(), strategy=strategy(0)))
        if exe.rank == 0:
            assert abs(sharded - plain) <= 1e-6 * abs(plain), (sharded, plain)
    if exe.rank == 0:
        print(f"stage {stage}: measured/planned {ratio:.3f}")
        print(f"all checks passed on {exe.world_size} rank(s)", flush=True)


if __name__ == "__main__":
    main()
