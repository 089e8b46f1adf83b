#!/usr/bin/env python3
"""A model with a while loop under data parallelism equals one process on
the full batch.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_while.py

The model: h = relu(fc(x)); a fluid.layers.While of 3 steps h = tanh(fc(h))
with one shared weight; a softmax classifier on h. Each rank feeds its
share of the global batch of 32 for 3 SGD steps; the parameters must equal
those one fluid.Executor reaches on the full batch (relative 1e-6), and
every persistable must be bitwise identical across ranks
(MPIExecutor.check_consistency). In the transpiled program the loop's
shared weight has one gradient, written by while_grad and reduced once.
The same with nested loops: each outer step runs an inner loop of 2 steps
(the inner loop's gradient runs inside the outer's).
Rank 0 prints one line per check; exits non-zero if one fails.
"""

import fluid
from mpi_equivalence import (Checks, equals_one_process, image_trainer,
                             script_main, summary)

L = fluid.layers
STEPS = 3
LOOP = 3


def inner_loop(h):
    """h's copy through 2 steps of tanh(fc(loop_w)), in a loop of its own;
    then tanh(fc(loop_u)) of it, written to h."""
    hl = L.assign(h)
    j = L.fill_constant([1], "int64", 0)
    m = L.fill_constant([1], "int64", 2)
    c = L.less_than(j, m)
    loop = L.While(c)
    with loop.block():
        L.assign(L.fc(hl, 16, act="tanh",
                      param_attr=fluid.ParamAttr(name="loop_w")), hl)
        L.increment(j)
        L.less_than(j, m, cond=c)
    L.assign(L.fc(hl, 16, act="tanh",
                  param_attr=fluid.ParamAttr(name="loop_u")), h)


def build(nested=False):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 5
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        image = L.data("image", [1, 28, 28])
        label = L.data("label", [1], dtype="int64")
        h = L.fc(image, 16, act="relu")
        i = L.fill_constant([1], "int64", 0)
        n = L.fill_constant([1], "int64", LOOP)
        cond = L.less_than(i, n)
        loop = L.While(cond)
        with loop.block():
            if nested:
                inner_loop(h)
            else:
                L.assign(L.fc(h, 16, act="tanh",
                              param_attr=fluid.ParamAttr(name="loop_w")), h)
            L.increment(i)
            L.less_than(i, n, cond=cond)
        logits = L.fc(h, 10)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
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

    def one_reduction():
        main, startup, loss = build()
        scope = fluid.Scope()
        keep.append(scope)
        train(exe, main, startup, loss, scope, rank, world)
        ops = exe.transpiled_program(main).ops()
        writers = [op["type"] for op in ops if "backward" in op["roles"]
                   and "loop_w@GRAD" in sum(op["outputs"].values(), [])]
        if writers != ["while_grad"]:
            return f"loop_w@GRAD written by the backward ops {writers}"
        return "OK loop_w@GRAD written once, by while_grad"

    c.check("(a) a while loop == Executor on the full batch, ranks bitwise "
            "equal", equivalence)
    c.check("(b) the loop's shared weight has one gradient", one_reduction)
    c.check("(c) nested loops == Executor on the full batch, ranks bitwise "
            "equal", lambda: equals_one_process(
                exe, lambda: build(nested=True), train, keep))
    exe = None  # noqa: F841 - the executor goes before the scopes
    return summary(c)


if __name__ == "__main__":
    script_main(run_checks)
