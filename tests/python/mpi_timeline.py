#!/usr/bin/env python3
"""MPIExecutor(timeline=...) records every rank's ops and collectives.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_timeline.py PATH [STEPS]

Every rank trains an mlp for STEPS steps (default 6) with small gradient
buckets (several allreduces per step), evaluates once with a test clone
(ops, no collectives), then closes the executor, which writes PATH on
rank 0; rank 0 prints "timeline written to PATH".
"""
import sys

import fluid
from mpi_equivalence import global_batch, shard

L = fluid.layers


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 3
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        image = L.data("image", [1, 28, 28])
        label = L.data("label", [1], dtype="int64")
        h = L.fc(image, 64, act="relu")
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(h, 10), label))
        test = main.clone(for_test=True)
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, test, loss


def main():
    path = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    exe = fluid.MPIExecutor(fluid.CPUPlace(), bucket_mb=0.05, timeline=path)
    rank, world = exe.rank, exe.world_size
    program, startup, test, loss = build()
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    for step in range(steps):
        x, y = shard(global_batch(step), rank, world)
        exe.run(program, feed={"image": x, "label": y}, fetch_list=[loss],
                scope=scope)
    x, y = shard(global_batch(steps), rank, world)
    exe.run(test, feed={"image": x, "label": y}, fetch_list=[loss],
            scope=scope)
    written = exe.close()
    if rank == 0:
        print(f"timeline written to {written}")
    exe.close()  # a second close does nothing
    return 0


if __name__ == "__main__":
    sys.exit(main())
