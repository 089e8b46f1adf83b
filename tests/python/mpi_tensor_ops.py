#!/usr/bin/env python3
"""A model built from the reduction and data-movement layers (reduce_*,
squeeze, unsqueeze, stack, unstack, expand, gather, slice) under data
parallelism equals one process on the full batch.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_tensor_ops.py

The model: an fc of the image, unsqueezed and expanded to two rows, added
to the stack of the fc and its double, unstacked; one row sliced and
shifted by the mean of rows gathered from a parameter table, the other
reshaped and reduced (max, squeezed); a 10-way fc of both joined, with a
cross entropy, plus small terms of reduce_min, reduce_sum and reduce_prod.
Every op works per example (the gather reads a parameter), so each rank
feeding its share of the global batch of 32 for 3 SGD steps must end with
the parameters one fluid.Executor reaches on the full batch (relative
1e-6), and every persistable must be bitwise identical across ranks
(MPIExecutor.check_consistency). Rank 0 prints the check's line; exits
non-zero if it fails.
"""

import numpy as np

import fluid
from mpi_equivalence import (Checks, equals_one_process, image_trainer,
                             script_main, summary)

L = fluid.layers
STEPS = 3


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 11
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        image = L.data("image", [1, 28, 28])
        label = L.data("label", [1], dtype="int64")
        h = L.fc(image, 12, act="tanh")                        # [N, 12]
        e = L.expand(L.unsqueeze(h, [1]), [1, 2, 1])           # [N, 2, 12]
        s = L.stack([h, L.scale(h, 2.0)], axis=1)              # [N, 2, 12]
        a, b = L.unstack(L.elementwise_add(e, s), axis=1)      # [N, 12]
        table = L.create_parameter([5, 8], "float32", name="table")
        rows = L.gather(table, L.assign(np.array([1, 3, 1], "int64")),
                        overwrite=False)                       # [3, 8]
        p = L.elementwise_add(L.slice(a, axes=[1], starts=[2], ends=[10]),
                              L.reduce_mean(rows, dim=0), axis=1)  # [N, 8]
        q = L.squeeze(L.reduce_max(L.reshape(b, [-1, 3, 4]), dim=2,
                                   keep_dim=True), [2])        # [N, 3]
        pred = L.fc(L.concat([p, q], axis=1), 10, act="softmax")
        loss = L.mean(L.cross_entropy(pred, label))
        extra = L.sums([L.reduce_mean(L.reduce_min(a, dim=1)),
                        L.reduce_mean(L.reduce_sum(b, dim=[1])),
                        L.reduce_mean(L.reduce_prod(L.sigmoid(p), dim=-1))])
        loss = L.elementwise_add(loss, L.scale(extra, 0.01))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss


train = image_trainer(STEPS)


def run_checks():
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    rank, world = exe.rank, exe.world_size
    c = Checks(rank, world)
    keep = []  # scopes outlive the executors bound to them

    def equivalence():
        return equals_one_process(exe, build, train, keep)

    c.check("(a) reduce_*, squeeze, unsqueeze, stack, unstack, expand, "
            "gather and slice == Executor on the full batch, ranks bitwise "
            "equal", equivalence)
    exe = None  # noqa: F841 - the executor goes before the scopes
    return summary(c)


if __name__ == "__main__":
    script_main(run_checks)
