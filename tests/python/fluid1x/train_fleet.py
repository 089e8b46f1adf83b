#!/usr/bin/env python3
"""Data-parallel training the Fleet way (Fluid 1.5-1.8, collective mode):

    mpirun -np N python3 train_fleet.py OUT

fleet.init with a PaddleCloudRoleMaker, the optimizer wrapped by
fleet.distributed_optimizer with a collective DistributedStrategy, the
startup program and fleet.main_program run by a plain fluid.Executor,
each worker feeding its share of the global batch; then worker 0 saves
the persistables and the inference model. The same model is trained with
fluid.MPIExecutor and the DistributedStrategy the Fleet strategy stands
for; both runs go to OUT/fleet.rank<r>.npz, the worker's index and count
and endpoints to its "extra" arrays (test_fleet_collective.py checks
them)."""
import argparse
import os

import numpy as np

import fluid
from fluid.incubate.fleet.base import role_maker
from fluid.incubate.fleet.collective import fleet, DistributedStrategy
from fluid1x_common import (mpi_reference, parameters, rank_batch,
                            save_results)

STEPS = 15


def build_net():
    image = fluid.layers.data(name="image", shape=[16], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    fc1 = fluid.layers.fc(input=image, size=24, act="relu")
    logits = fluid.layers.fc(input=fc1, size=4)
    cost = fluid.layers.softmax_with_cross_entropy(logits=logits,
                                                   label=label)
    return image, label, logits, fluid.layers.mean(cost)


def build_fresh():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 11
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        image, label, _, avg_cost = build_net()
        fluid.optimizer.Momentum(learning_rate=0.05,
                                 momentum=0.9).minimize(avg_cost)
    return main, startup, avg_cost, [image, label]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    args = parser.parse_args()

    role = role_maker.PaddleCloudRoleMaker(is_collective=True)
    fleet.init(role)

    train_prog, startup_prog = fluid.Program(), fluid.Program()
    train_prog.random_seed = 11
    with fluid.unique_name.guard(), \
            fluid.program_guard(train_prog, startup_prog):
        image, label, logits, avg_cost = build_net()
        dist_strategy = DistributedStrategy()
        dist_strategy.mode = "collective"
        dist_strategy.collective_mode = "grad_allreduce"
        dist_strategy.nccl_comm_num = 2
        dist_strategy.fuse_all_reduce_ops = True
        dist_strategy.fuse_grad_size_in_MB = 1
        dist_strategy.use_hierarchical_allreduce = False
        dist_strategy.exec_strategy.num_threads = 1
        optimizer = fluid.optimizer.Momentum(learning_rate=0.05,
                                             momentum=0.9)
        optimizer = fleet.distributed_optimizer(optimizer,
                                                strategy=dist_strategy)
        optimizer.minimize(avg_cost)

    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    exe.run(fleet.startup_program)
    feeder = fluid.DataFeeder(place=place, feed_list=[image, label],
                              program=train_prog)
    losses = []
    for step in range(STEPS):
        batch = rank_batch(step, fleet.worker_index(), fleet.worker_num())
        loss, = exe.run(fleet.main_program, feed=feeder.feed(batch),
                        fetch_list=[avg_cost.name])
        losses.append(float(np.mean(loss)))
    params = parameters(train_prog, fluid.global_scope())

    fleet.save_persistables(exe, os.path.join(args.out, "persistables"))
    fleet.save_inference_model(exe, os.path.join(args.out, "model"),
                               [image.name], [logits])
    fleet.barrier_worker()
    saved = os.path.isdir(os.path.join(args.out, "persistables")) and \
        os.path.isdir(os.path.join(args.out, "model"))

    expected = fluid.DistributedStrategy()
    expected.fuse_grad_size_in_MB = 1
    ref_losses, ref_params = mpi_reference(build_fresh, expected, STEPS)
    save_results(args.out, "fleet", losses, params, ref_losses, ref_params,
                 worker_index=fleet.worker_index(),
                 worker_num=fleet.worker_num(),
                 first=fleet.is_first_worker(),
                 server=fleet.is_server(),
                 endpoints=",".join(fleet.worker_endpoints()),
                 saved_after_barrier=saved)


if __name__ == "__main__":
    main()
