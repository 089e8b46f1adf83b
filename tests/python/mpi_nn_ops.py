#!/usr/bin/env python3
"""A model built from group_norm, prelu, l2_normalize, cos_sim and
smooth_l1 under data parallelism equals one process on the full batch.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_nn_ops.py

The model: conv2d, group_norm (2 groups), prelu per channel, an fc to an
embedding normalised by l2_normalize, its cos_sim with a second fc branch,
and smooth_l1 of a 10-way fc against the one-hot label; the loss is the
mean of the smooth_l1 rows minus a tenth of the mean similarity. Every op
works per example, so each rank feeding its share of the global batch of
32 for 3 SGD steps must end with the parameters one fluid.Executor reaches
on the full batch (relative 1e-6), and every persistable must be bitwise
identical across ranks (MPIExecutor.check_consistency). Then the random
creation layers (uniform_random with seed 0, gaussian_random with a seed,
uniform_random_batch_size_like) drawn by fluid.MPIExecutor on every rank,
twice, equal what one process draws with fluid.Executor: the same values
on every rank and in every run. Rank 0 prints one line per check; a
failing rank says why; exits non-zero if a check fails.
"""

import numpy as np

import fluid
from mpi_equivalence import (Checks, equals_one_process, global_batch,
                             image_trainer, script_main, summary)

L = fluid.layers
STEPS = 3


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 11
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        image = L.data("image", [1, 28, 28])
        label = L.data("label", [1], dtype="int64")
        h = L.conv2d(image, 4, 3, stride=2)
        h = L.group_norm(h, groups=2)
        h = L.prelu(h, "channel")
        emb = L.l2_normalize(L.fc(h, 8), axis=1)
        sim = L.cos_sim(emb, L.fc(h, 8, act="tanh"))
        pred = L.fc(emb, 10)
        rows = L.smooth_l1(pred, L.one_hot(label, 10), sigma=2.0)
        loss = L.elementwise_sub(L.mean(rows), L.scale(L.mean(sim), 0.1))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss


train = image_trainer(STEPS)


def build_draws():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [3])
        draws = [L.uniform_random([4, 5]),
                 L.gaussian_random([6], std=2.0, seed=7),
                 L.uniform_random_batch_size_like(x, [-1, 2], min=0.0)]
    return main, startup, draws


def draw(exe, scope):
    main, startup, draws = build_draws()
    exe.run(startup, scope=scope)
    feed = {"x": global_batch(0)[0].reshape(-1)[:48].reshape(16, 3)}
    return [exe.run(main, feed=feed, fetch_list=draws, scope=scope)
            for _ in range(2)]


def run_checks():
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    rank, world = exe.rank, exe.world_size
    c = Checks(rank, world)
    keep = []  # scopes outlive the executors bound to them

    def equivalence():
        return equals_one_process(exe, build, train, keep)

    def same_draws():
        ref_scope, scope = fluid.Scope(), fluid.Scope()
        keep.extend([ref_scope, scope])
        want = draw(fluid.Executor(fluid.CPUPlace()), ref_scope)[0]
        for run, got in enumerate(draw(exe, scope)):
            for k, (g, w) in enumerate(zip(got, want)):
                if not np.array_equal(g, w):
                    return (f"rank {rank} run {run}: draw {k} differs from "
                            "one process's")
        return "OK every rank draws one process's values, in both runs"

    c.check("(a) group_norm, prelu, l2_normalize, cos_sim and smooth_l1 "
            "== Executor on the full batch, ranks bitwise equal", equivalence)
    c.check("(b) the random creation layers draw the same values on every "
            "rank and in every run", same_draws)
    exe = None  # noqa: F841 - the executor goes before the scopes
    return summary(c)


if __name__ == "__main__":
    script_main(run_checks)
