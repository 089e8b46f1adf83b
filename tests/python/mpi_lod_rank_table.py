#!/usr/bin/env python3
"""A model with the loop DynamicRNN builds from the LoD-rank layers under
data parallelism equals one process on the full batch.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_lod_rank_table.py

The model: sequences of lengths 1 to 5 ranked (lod_rank_table), split into
steps (lod_tensor_to_array), a fluid.layers.While over the steps h_t =
tanh(fc(x_t) + fc(h_{t-1})) with the state kept in an array and shrunk as
sequences end (shrink_memory; the initial state reordered by rank,
reorder_lod_tensor_by_rank), the steps merged back (array_to_lod_tensor),
summed per sequence and classified. Each rank feeds its share of the 8
sequences for 3 SGD steps; the parameters must equal those one
fluid.Executor reaches on the full batch (relative 1e-6), and every
persistable must be bitwise identical across ranks. Rank 0 prints one line
per check; exits non-zero if one fails.
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
        table = L.lod_rank_table(x)
        steps = L.lod_tensor_to_array(x, table)
        n = L.max_sequence_len(table)
        zero = L.fill_constant([1], "int64", 0)
        mems = L.array_write(L.reorder_lod_tensor_by_rank(h0, table), zero)
        outs = L.create_array("float32")
        i = L.fill_constant([1], "int64", 0)
        cond = L.less_than(i, n)
        loop = L.While(cond)
        with loop.block():
            prev = L.shrink_memory(L.array_read(mems, i), i, table)
            h = L.tanh(L.elementwise_add(
                L.fc(L.array_read(steps, i), H,
                     param_attr=fluid.ParamAttr(name="wx")),
                L.fc(prev, H, bias_attr=False,
                     param_attr=fluid.ParamAttr(name="wh"))))
            L.array_write(h, i, array=outs)
            L.array_write(h, L.increment(i, in_place=False), array=mems)
            L.increment(i)
            L.less_than(i, n, cond=cond)
        seq = L.sequence_pool(L.array_to_lod_tensor(outs, table), "sum")
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
    c.check("(a) a DynamicRNN-style loop == Executor on the full batch, "
            "ranks bitwise equal",
            lambda: equals_one_process(exe, build, train, keep))
    exe = None  # noqa: F841 - the executor goes before the scopes
    return summary(c)


if __name__ == "__main__":
    script_main(run_checks)
