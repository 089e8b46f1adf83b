#!/usr/bin/env python3
"""A model built from conv2d_transpose, resize_bilinear and
resize_nearest under data parallelism equals one process on the full batch.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_image_ops.py

The model: conv2d (stride 2) to 13 x 13, resize_bilinear to 8 x 8 at
half-pixel centres, conv2d_transpose (stride 2, a 4x4 filter, padding 1,
two groups) back up to 16 x 16 with a relu, resize_nearest by scale 0.5
with aligned corners, an fc to 10 classes and the mean softmax cross
entropy. Every op works per example, so each rank feeding its share of the
global batch of 32 for 3 SGD steps must end with the parameters one
fluid.Executor reaches on the full batch (relative 1e-6), and every
persistable must be bitwise identical across ranks
(MPIExecutor.check_consistency). Rank 0 prints the check's line; exits
non-zero if it fails.
"""

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
        h = L.conv2d(image, 4, 3, stride=2)
        h = L.resize_bilinear(h, out_shape=[8, 8], align_corners=False,
                              align_mode=0)
        h = L.conv2d_transpose(h, 6, filter_size=4, stride=2, padding=1,
                               groups=2, act="relu")
        h = L.resize_nearest(h, scale=0.5)
        pred = L.fc(h, 10)
        loss = L.mean(L.softmax_with_cross_entropy(pred, label))
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

    c.check("(a) conv2d_transpose, resize_bilinear and resize_nearest "
            "== Executor on the full batch, ranks bitwise equal", equivalence)
    exe = None  # noqa: F841 - the executor goes before the scopes
    return summary(c)


if __name__ == "__main__":
    script_main(run_checks)
