#!/usr/bin/env python3
"""Beam search under data parallelism: a bigram language model trained 3
steps, then decoded in shares, equals one process on the full batch.

    mpirun -np 2 /usr/bin/python3 tests/python/mpi_beam_search.py

The model: a table "lm" [V, V] of next-token logits (embedding of the last
token, softmax, cross-entropy with the next token). Each rank trains on its
share of the global batch of token pairs for 3 SGD steps under
fluid.MPIExecutor; the table must equal the one fluid.Executor reaches on
the full batch (relative 1e-6), bitwise alike on every rank
(check_consistency). Then each rank decodes its share of the source
sentences with the trained table (chapter 08's loop: While, topk,
beam_search, beam_search_decode, stateless ops), which must give the
sentences and scores one process decoding every source gives them.
Rank 0 prints one line per check; exits non-zero if one fails.
"""

import numpy as np

import fluid
from mpi_equivalence import Checks, compare, max_rel, script_main, summary
from test_beam_search import V, build_decoder

L = fluid.layers
STEPS, BATCH, BEAM, MAX_LEN = 3, 32, 3, 4
STARTS = [0, 1, 2, 3, 0, 2]


def build_lm():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = 11
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        last = L.data("last", [1], dtype="int64")
        nxt = L.data("next", [1], dtype="int64")
        logits = L.embedding(last, size=[V, V],
                             param_attr=fluid.ParamAttr(name="lm"))
        loss = L.mean(L.softmax_with_cross_entropy(logits, nxt))
        fluid.optimizer.SGD(0.5).minimize(loss)
    return main, startup, loss


def batch(step):
    rng = np.random.RandomState(100 + step)
    last = rng.randint(0, V, (BATCH, 1)).astype("int64")
    return last, ((last * 2 + rng.randint(0, 2, (BATCH, 1))) % V)


def train(exe, scope, rank=0, world=1):
    main, startup, loss = build_lm()
    exe.run(startup, scope=scope)
    per = BATCH // world
    for step in range(STEPS):
        last, nxt = batch(step)
        feed = {"last": last[rank * per:(rank + 1) * per],
                "next": nxt[rank * per:(rank + 1) * per]}
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    return np.array(scope.find_var("lm").get_tensor())


def decode(scope, starts):
    """[(sentences, final scores)] per start, the table read from scope."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        # This package's one-level form (test_beam_search runs both).
        sent_ids, sent_scores = build_decoder(BEAM, MAX_LEN, logits=True,
                                              levels=1)
    place, n = fluid.CPUPlace(), len(starts)
    feed = {"init_ids": fluid.create_lod_tensor(
                np.array(starts, "int64").reshape(n, 1), [[1] * n], place),
            "init_scores": fluid.create_lod_tensor(
                np.zeros((n, 1), "float32"), [[1] * n], place)}
    ids, scores = fluid.Executor(place).run(
        main, feed=feed, fetch_list=[sent_ids, sent_scores], scope=scope,
        return_numpy=False)
    tokens, values = np.array(ids), np.array(scores)
    sources, hyps = ids.lod()[0], scores.lod()[0]
    out = [([], []) for _ in starts]
    for a, b in zip(hyps, hyps[1:]):
        s = int(np.searchsorted(sources, a, side="right")) - 1
        out[s][0].append(tokens[a:b].tolist())
        out[s][1].append(float(values[b - 1]))
    return out


def run_checks():
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    rank, world = exe.rank, exe.world_size
    c = Checks(rank, world)
    ref_scope, scope = fluid.Scope(), fluid.Scope()
    keep = [ref_scope, scope]  # scopes outlive the executors bound to them

    def training():
        want = train(fluid.Executor(fluid.CPUPlace()), ref_scope)
        got = train(exe, scope, rank, world)
        exe.check_consistency()  # every persistable, bitwise
        bad = compare({"lm": got}, {"lm": want}, rtol=1e-6)
        return bad or ("OK max relative difference "
                       f"{max_rel({'lm': got}, {'lm': want}):.2e}")

    def decoding():
        per = len(STARTS) // world
        mine = STARTS[rank * per:(rank + 1) * per]
        got = decode(scope, mine)
        want = decode(ref_scope, STARTS)[rank * per:(rank + 1) * per]
        for s, ((sent, sc), (wsent, wsc)) in enumerate(zip(got, want)):
            if sent != wsent:
                return f"source {s}: {sent} != {wsent}"
            if not np.allclose(sc, wsc, rtol=0, atol=1e-6):
                return f"source {s}: scores {sc} != {wsc}"
        return f"OK {len(mine)} sources on rank {rank} decoded alike"

    c.check("(a) the bigram model trained 3 steps == Executor on the full "
            "batch, ranks bitwise equal", training)
    c.check("(b) each rank's share decodes as one process decodes it",
            decoding)
    exe = None  # noqa: F841 - the executor goes before the scopes
    del keep
    return summary(c)


if __name__ == "__main__":
    script_main(run_checks)
