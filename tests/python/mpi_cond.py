#!/usr/bin/env python3
"""A model with fluid.layers.cond under data parallelism equals one process
on the full batch.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_cond.py

The model: h = relu(fc(x)); cond(step < 2, tanh(fc_t(h)), relu(fc_f(h)) +
h) on a persistable step counter (the true branch in steps 1 and 2, the
false one in step 3); a softmax classifier on the result. Each rank feeds
its share of the global batch of 32 for 3 SGD steps; the parameters must
equal those one fluid.Executor reaches on the full batch (relative 1e-6),
and every persistable must be bitwise identical across ranks
(MPIExecutor.check_consistency). In the transpiled program each branch's
weight has one gradient, written by conditional_block_grad.
Rank 0 prints one line per check; exits non-zero if one fails.
"""

import fluid
from mpi_equivalence import (Checks, equals_one_process, image_trainer,
                             script_main, summary)

L = fluid.layers
STEPS = 3


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 5
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        image = L.data("image", [1, 28, 28])
        label = L.data("label", [1], dtype="int64")
        h = L.fc(image, 16, act="relu")
        step = L.create_global_var([1], 0.0, "float32", persistable=True,
                                   name="step")
        L.increment(step, 1.0)
        two = L.fill_constant([1], "float32", 2.5)
        pred = L.less_than(step, two)
        out = L.cond(
            pred,
            lambda: L.fc(h, 16, act="tanh",
                         param_attr=fluid.ParamAttr(name="true_w")),
            lambda: L.fc(h, 16, act="relu",
                         param_attr=fluid.ParamAttr(name="false_w")) + h)
        logits = L.fc(out, 10)
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

    def one_gradient():
        main, startup, loss = build()
        scope = fluid.Scope()
        keep.append(scope)
        train(exe, main, startup, loss, scope, rank, world)
        ops = exe.transpiled_program(main).ops()
        for w in ("true_w@GRAD", "false_w@GRAD"):
            writers = [op["type"] for op in ops if "backward" in op["roles"]
                       and w in sum(op["outputs"].values(), [])]
            if writers != ["conditional_block_grad"]:
                return f"{w} written by the backward ops {writers}"
        return "OK each branch's weight gradient written once"

    c.check("(a) a model with cond == Executor on the full batch, ranks "
            "bitwise equal", equivalence)
    c.check("(b) each branch's weight has one gradient", one_gradient)
    exe = None  # noqa: F841 - the executor goes before the scopes
    return summary(c)


if __name__ == "__main__":
    script_main(run_checks)
