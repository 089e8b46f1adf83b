#!/usr/bin/env python3
"""Word2vec-style models over hsigmoid and nce under data parallelism.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_sampled_losses.py

(a) and (b): an embedding (sparse rows) feeding hsigmoid, over the default
tree with a sparse weight gradient under SGD, and over a custom tree with
dense gradients under Adam; hsigmoid works per example, so each rank
feeding its share of the global batch of 32 for 3 steps must end with the
parameters one fluid.Executor reaches on the full batch (relative 1e-6).
(c) and (d): an embedding feeding nce with is_sparse=True (the weight's
and the bias's gradients sparse rows) under SGD and Adam. nce's negatives
are drawn per (seed, step, row), the same on every rank, so a rank's
rows draw what the same rows of a one-process run draw, not what the
full batch's later rows draw: these check that the parameters move and
stay bitwise identical across ranks, with the sampled classes of each
step equal on every rank. Every check also holds every persistable
bitwise identical across ranks (MPIExecutor.check_consistency). Rank 0
prints the checks' lines; exits non-zero if one fails.
"""

import numpy as np

import fluid
from mpi_equivalence import (Checks, compare, max_rel, param_names, params_of,
                             script_main, summary)

L = fluid.layers
STEPS = 3
VOCAB, DIM, CLASSES, BATCH, DEPTH = 30, 8, 13, 32, 3


def global_batch(step):
    """Step `step`'s words, labels and custom-tree paths (depth 1 to 3)."""
    rng = np.random.RandomState(500 + step)
    words = rng.randint(0, VOCAB, (BATCH, 1)).astype("int64")
    labels = ((words * 7 + 3) % CLASSES).astype("int64")
    table = -np.ones((BATCH, DEPTH), dtype="int64")
    code = rng.randint(0, 2, (BATCH, DEPTH)).astype("int64")
    for i in range(BATCH):
        length = 1 + (i + step) % DEPTH
        table[i, :length] = rng.choice(CLASSES - 1, length, replace=False)
    return {"words": words, "label": labels, "table": table, "code": code}


def build(loss_kind, optimizer):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 5
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        words = L.data("words", [1], dtype="int64")
        label = L.data("label", [1], dtype="int64")
        emb = L.reshape(L.embedding(words, [VOCAB, DIM], is_sparse=True),
                        [-1, DIM])
        if loss_kind == "hsigmoid_default":
            cost = L.hsigmoid(emb, label, CLASSES, is_sparse=True)
        elif loss_kind == "hsigmoid_custom":
            table = L.data("table", [DEPTH], dtype="int64")
            code = L.data("code", [DEPTH], dtype="int64")
            cost = L.hsigmoid(emb, label, CLASSES - 1, path_table=table,
                              path_code=code, is_custom=True)
        else:
            cost = L.nce(emb, label, CLASSES, num_neg_samples=4, seed=17,
                         is_sparse=True)
        loss = L.mean(cost)
        optimizer().minimize(loss)
    return main, startup, loss


def train(exe, main, startup, loss, scope, rank=0, world=1):
    """Runs STEPS steps; returns nce's sampled classes of each step (or
    an empty list)."""
    exe.run(startup, scope=scope)
    nce = [op for op in main.global_block().ops if op.type == "nce"]
    fetch = [loss] + [nce[0].output("SampleLabels")[0]] if nce else [loss]
    samples = []
    for step in range(STEPS):
        feed = global_batch(step)
        if "table" not in {v["name"] for v in main.desc.vars()}:
            feed = {k: feed[k] for k in ("words", "label")}
        per = BATCH // world
        feed = {k: v[rank * per:(rank + 1) * per] for k, v in feed.items()}
        out = exe.run(main, feed=feed, fetch_list=fetch, scope=scope)
        if nce:
            samples.append(out[1][:, 1:])
    return samples


def run_checks():
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    rank, world = exe.rank, exe.world_size
    c = Checks(rank, world)
    keep = []  # scopes outlive the executors bound to them

    def equivalence(kind, optimizer):
        main, startup, loss = build(kind, optimizer)
        names = param_names(main)
        ref_scope = fluid.Scope()
        keep.append(ref_scope)
        ref = fluid.Executor(fluid.CPUPlace())
        train(ref, main, startup, loss, ref_scope)
        want = params_of(ref_scope, names)
        del ref
        scope = fluid.Scope()
        keep.append(scope)
        train(exe, main, startup, loss, scope, rank, world)
        exe.check_consistency()
        got = params_of(scope, names)
        bad = compare(got, want, rtol=1e-6)
        return bad or f"OK max relative difference {max_rel(got, want):.2e}"

    def nce_trains(optimizer):
        main, startup, loss = build("nce", optimizer)
        names = param_names(main)
        scope = fluid.Scope()
        keep.append(scope)
        exe.run(startup, scope=scope)
        start = params_of(scope, names)
        scope = fluid.Scope()
        keep.append(scope)
        samples = train(exe, main, startup, loss, scope, rank, world)
        exe.check_consistency()
        got = params_of(scope, names)
        unmoved = [n for n in names if np.array_equal(got[n], start[n])]
        if unmoved:
            return f"parameters unchanged: {unmoved}"
        # Row i of every rank draws the same classes at a step; the
        # one-process run on this rank's rows draws them too.
        ref_scope = fluid.Scope()
        keep.append(ref_scope)
        ref = fluid.Executor(fluid.CPUPlace())
        alone = train(ref, main, startup, loss, ref_scope, rank, world)
        del ref
        for step, (a, b) in enumerate(zip(samples, alone)):
            if not np.array_equal(a, b):
                return f"step {step}: the ranks' samples differ"
        if all(np.array_equal(samples[0], s) for s in samples[1:]):
            return "every step drew the same classes"
        return "OK"

    sgd = lambda: fluid.optimizer.SGD(0.5)  # noqa: E731
    adam = lambda: fluid.optimizer.Adam(0.02)  # noqa: E731
    c.check("(a) embedding + hsigmoid (default tree, sparse W), SGD "
            "== Executor on the full batch, ranks bitwise equal",
            lambda: equivalence("hsigmoid_default", sgd))
    c.check("(b) embedding + hsigmoid (custom tree), Adam == Executor on the "
            "full batch, ranks bitwise equal",
            lambda: equivalence("hsigmoid_custom", adam))
    c.check("(c) embedding + nce (sparse), SGD: trains, ranks bitwise equal",
            lambda: nce_trains(sgd))
    c.check("(d) embedding + nce (sparse), Adam: trains, ranks bitwise equal",
            lambda: nce_trains(adam))
    exe = None  # noqa: F841 - the executor goes before the scopes
    return summary(c)


if __name__ == "__main__":
    script_main(run_checks)
