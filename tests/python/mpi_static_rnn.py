#!/usr/bin/env python3
"""A model with a fluid.layers.StaticRNN under data parallelism equals one
process on the full batch.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_static_rnn.py

The model: a StaticRNN of T = 4 steps h_t = tanh(fc(x_t) + fc(h_{t-1}))
over x [T, B, 8] (the batch is dim 1, as StaticRNN's step inputs have
it), a softmax classifier on the last step's output. Each rank feeds its
share of the global batch of 16 (rows of dim 1) for 3 Adam steps; the
parameters must equal those one fluid.Executor reaches on the full batch
(relative 1e-6), and every persistable must be bitwise identical across
ranks (MPIExecutor.check_consistency). Rank 0 prints one line per check;
exits non-zero if one fails.
"""

import numpy as np

import fluid
from mpi_equivalence import (Checks, equals_one_process, feed_trainer,
                             script_main, summary)

L = fluid.layers
STEPS, T, BATCH, D, H = 3, 4, 16, 8, 12


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 5
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [T, -1, D], append_batch_size=False)
        label = L.data("label", [1], dtype="int64")
        rnn = L.StaticRNN()
        with rnn.step():
            x_t = rnn.step_input(x)
            h = rnn.memory(shape=[-1, H], batch_ref=x_t)
            new = L.tanh(L.fc(x_t, H) + L.fc(h, H, bias_attr=False))
            rnn.update_memory(h, new)
            rnn.step_output(new)
        last = L.squeeze(L.slice(rnn(), axes=[0], starts=[T - 1], ends=[T]),
                         axes=[0])
        logits = L.fc(last, 4)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        fluid.optimizer.Adam(0.01).minimize(loss)
    return main, startup, loss


def batch(step, rank=0, world=1):
    """Step `step`'s feed: this rank's rows of the global batch."""
    rng = np.random.RandomState(200 + step)
    x = rng.uniform(-1, 1, (T, BATCH, D)).astype(np.float32)
    y = (x[:, :, 0].sum(axis=0) > 0).astype(np.int64).reshape(BATCH, 1)
    per = BATCH // world
    rows = slice(rank * per, (rank + 1) * per)
    return {"x": x[:, rows], "label": y[rows]}


train = feed_trainer(batch, STEPS)


def run_checks():
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    rank, world = exe.rank, exe.world_size
    c = Checks(rank, world)
    keep = []  # scopes outlive the executors bound to them

    def equivalence():
        return equals_one_process(exe, build, train, keep)

    c.check("(a) a StaticRNN == Executor on the full batch, ranks bitwise "
            "equal", equivalence)
    exe = None  # noqa: F841 - the executor goes before the scopes
    return summary(c)


if __name__ == "__main__":
    script_main(run_checks)
