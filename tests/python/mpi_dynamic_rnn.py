#!/usr/bin/env python3
"""A model with a fluid.layers.DynamicRNN under data parallelism equals one
process on the full batch.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_dynamic_rnn.py

The model: a DynamicRNN over sequences of lengths 1 to 5, h_t =
tanh(fc(x_t) + fc(h_{t-1})) with the memory from an initial state
(need_reorder=True) and a static input, its output summed per sequence
and classified. Each rank feeds its share of the 8 sequences for 3 SGD
steps; the parameters must equal those one fluid.Executor reaches on the
full batch (relative 1e-6), and every persistable must be bitwise
identical across ranks. Rank 0 prints one line per check; exits non-zero
if one fails.
"""
import fluid
from mpi_equivalence import (Checks, equals_one_process, feed_trainer,
                             script_main, sequence_feed, summary)

L = fluid.layers
STEPS = 3
SEQS = 8
D, H = 4, 6


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 5
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [D], lod_level=1)
        h0 = L.data("h0", [H])
        label = L.data("label", [1], dtype="int64")
        drnn = L.DynamicRNN()
        with drnn.block():
            x_t = drnn.step_input(x)
            prev = drnn.memory(init=h0, need_reorder=True)
            c = drnn.static_input(h0)
            h = L.tanh(L.elementwise_add(
                L.fc(x_t, H, param_attr=fluid.ParamAttr(name="wx")),
                L.fc([prev, c], H, bias_attr=False)))
            drnn.update_memory(prev, h)
            drnn.output(h)
        seq = L.sequence_pool(drnn(), "sum")
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(seq, 3), label))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss


def batch(step, rank=0, world=1):
    return sequence_feed(step, rank, world, SEQS, D, H)


train = feed_trainer(batch, STEPS)


def run_checks():
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    c = Checks(exe.rank, exe.world_size)
    keep = []  # scopes outlive the executors bound to them
    c.check("(a) a DynamicRNN == Executor on the full batch, "
            "ranks bitwise equal",
            lambda: equals_one_process(exe, build, train, keep))
    exe = None  # noqa: F841 - the executor goes before the scopes
    return summary(c)


if __name__ == "__main__":
    script_main(run_checks)
