#!/usr/bin/env python3
"""Data-parallel training the Fluid 1.0-1.4 way: the default programs, the
startup program run by a plain fluid.Executor, then a
fluid.ParallelExecutor for training and one sharing its variables for
testing.

    mpirun -np N python3 train_parallel_executor.py OUT

Trains 15 steps (gradients averaged over the ranks, one allreduce per
gradient), evaluates the test program on a batch, then trains the same
model with fluid.MPIExecutor and the DistributedStrategy that stands for
the build strategy; writes both runs to OUT/parallel_executor.rank<r>.npz
(test_parallel_executor.py compares them)."""
import argparse

import numpy as np

import fluid
from fluid1x_common import (global_batch, mpi_reference, parameters,
                            rank_and_world, rank_batch, save_results)

STEPS = 15


def build_net():
    x = fluid.layers.data(name="x", shape=[16], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="int64")
    hidden = fluid.layers.fc(input=x, size=32, act="tanh")
    predict = fluid.layers.fc(input=hidden, size=4, act="softmax")
    avg_cost = fluid.layers.mean(fluid.layers.cross_entropy(input=predict,
                                                            label=y))
    acc = fluid.layers.accuracy(input=predict, label=y)
    return x, y, avg_cost, acc


def build_fresh():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 3
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x, y, avg_cost, _ = build_net()
        fluid.optimizer.Adam(learning_rate=0.02).minimize(avg_cost)
    return main, startup, avg_cost, [x, y]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    args = parser.parse_args()
    rank, world = rank_and_world()

    fluid.default_main_program().random_seed = 3
    with fluid.unique_name.guard():
        x, y, avg_cost, acc = build_net()
        test_program = fluid.default_main_program().clone(for_test=True)
        fluid.optimizer.Adam(learning_rate=0.02).minimize(avg_cost)

    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    exe.run(fluid.default_startup_program())

    build_strategy = fluid.BuildStrategy()
    build_strategy.fuse_all_reduce_ops = False
    exec_strategy = fluid.ExecutionStrategy()
    exec_strategy.num_threads = 1
    exec_strategy.num_iteration_per_drop_scope = 10
    train_exe = fluid.ParallelExecutor(
        use_cuda=False, loss_name=avg_cost.name,
        build_strategy=build_strategy, exec_strategy=exec_strategy,
        num_trainers=world, trainer_id=rank)
    test_exe = fluid.ParallelExecutor(
        use_cuda=False, main_program=test_program, share_vars_from=train_exe)
    assert train_exe.device_count == 1

    feeder = fluid.DataFeeder(place=place, feed_list=[x, y])
    losses = []
    for step in range(STEPS):
        loss, = train_exe.run(fetch_list=[avg_cost.name],
                              feed=feeder.feed(rank_batch(step, rank, world)))
        losses.append(float(np.mean(loss)))
    tx, ty = global_batch(100)
    test_loss, test_acc = test_exe.run(
        fetch_list=[avg_cost.name, acc.name],
        feed_dict={"x": tx, "y": ty})

    expected = fluid.DistributedStrategy()
    expected.bucket_bytes = 1
    ref_losses, ref_params = mpi_reference(build_fresh, expected, STEPS)
    params = parameters(fluid.default_main_program(), fluid.global_scope())
    save_results(args.out, "parallel_executor", losses, params,
                 ref_losses, ref_params, test_loss=test_loss,
                 test_acc=test_acc)
    if rank == 0:
        print(f"test loss {float(test_loss[0]):.4f} "
              f"accuracy {float(test_acc[0]):.4f}")


if __name__ == "__main__":
    main()
