#!/usr/bin/env python3
"""Data-parallel training the Fluid 1.5 way: a plain fluid.Executor runs
the startup program, then a CompiledProgram made data-parallel with a
BuildStrategy, each rank feeding its share of the global batch.

    mpirun -np N python3 train_compiled.py OUT [--warm-start-on-rank-0]

For each build strategy below it trains 15 steps, then trains the same
model with fluid.MPIExecutor and the DistributedStrategy the build
strategy stands for, and writes both runs' losses and parameters to
OUT/<strategy>.rank<r>.npz (test_compiled_program.py compares them).
After the startup program every rank warm-starts (sets the last bias from
NumPy, as a script restoring values does); with --warm-start-on-rank-0
only rank 0 does, as a script loading a checkpoint on rank 0 only: the
first step must give every rank rank 0's values, warm start included
(the reference warm-starts every rank)."""
import argparse

import numpy as np

import fluid
from fluid1x_common import (mpi_reference, parameters, rank_and_world,
                            rank_batch, save_results)

STEPS = 15
SEED = 5


def build(seed):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[16], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="int64")
        hidden = fluid.layers.fc(input=x, size=32, act="relu")
        predict = fluid.layers.fc(input=hidden, size=4, act="softmax")
        cost = fluid.layers.cross_entropy(input=predict, label=y)
        avg_cost = fluid.layers.mean(cost)
        sgd = fluid.optimizer.Momentum(learning_rate=0.1, momentum=0.9)
        sgd.minimize(avg_cost)
    return main, startup, avg_cost, [x, y]


def warm_start(scope):
    bias = scope.find_var("fc_1.b_0").get_tensor()
    bias.set(np.full([4], 0.25, dtype=np.float32), fluid.CPUPlace())


def strategies():
    """(name, BuildStrategy, the DistributedStrategy it stands for)."""
    plain = fluid.BuildStrategy()
    expect_plain = fluid.DistributedStrategy()

    reduce_ = fluid.BuildStrategy()
    reduce_.reduce_strategy = fluid.BuildStrategy.ReduceStrategy.Reduce
    reduce_.enable_inplace = True
    reduce_.memory_optimize = False
    expect_reduce = fluid.DistributedStrategy()
    expect_reduce.sharding = True
    expect_reduce.sharding_configs = {"stage": 2}

    summed = fluid.BuildStrategy()
    summed.gradient_scale_strategy = \
        fluid.BuildStrategy.GradientScaleStrategy.One
    summed.fuse_all_reduce_ops = False
    summed.fuse_elewise_add_act_ops = True
    expect_summed = fluid.DistributedStrategy()
    expect_summed.average_gradients = False
    expect_summed.bucket_bytes = 1
    return [("allreduce", plain, expect_plain),
            ("reduce", reduce_, expect_reduce),
            ("one_unfused", summed, expect_summed)]


def train(build_strategy, warm):
    rank, world = rank_and_world()
    main, startup, avg_cost, feed_vars = build(SEED)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        if warm:
            warm_start(scope)
        exec_strategy = fluid.ExecutionStrategy()
        exec_strategy.num_threads = 1
        compiled = fluid.CompiledProgram(main).with_data_parallel(
            loss_name=avg_cost.name, build_strategy=build_strategy,
            exec_strategy=exec_strategy, places=fluid.cpu_places())
        feeder = fluid.DataFeeder(feed_list=feed_vars, place=place,
                                  program=main)
        losses = []
        for step in range(STEPS):
            loss, = exe.run(compiled,
                            feed=feeder.feed(rank_batch(step, rank, world)),
                            fetch_list=[avg_cost.name])
            losses.append(float(np.mean(loss)))
    return losses, parameters(main, scope)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--warm-start-on-rank-0", action="store_true")
    args = parser.parse_args()
    rank, _ = rank_and_world()
    warm = rank == 0 or not args.warm_start_on_rank_0
    for name, build_strategy, expected in strategies():
        losses, params = train(build_strategy, warm)
        ref_losses, ref_params = mpi_reference(
            lambda: build(SEED), expected, STEPS, warm_start)
        save_results(args.out, name, losses, params, ref_losses, ref_params)
    if rank == 0:
        print("trained with", ", ".join(n for n, _, _ in strategies()))


if __name__ == "__main__":
    main()
