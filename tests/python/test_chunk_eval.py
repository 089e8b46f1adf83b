"""fluid.layers.chunk_eval against a chunk decoder written here from the
schemes' definitions (a tag sequence read token by token, chunks as
(first, last, type) sets): every scheme, random tags, LoD batches and
padded ones with seq_length, excluded types; and fluid.metrics.
ChunkEvaluator over its counts."""
import numpy as np
import pytest

import fluid

L = fluid.layers
TAGS = {"IOB": "BI", "IOE": "IE", "IOBES": "BIES", "plain": "X"}


def chunks(ids, scheme, num_types):
    """The set of (first, last, type) chunks of one sequence of tag ids."""
    letters = TAGS[scheme]
    outside = num_types * len(letters)
    found, start, cur = set(), None, None  # the open chunk: start, type
    prev_kind = ""

    def close(end):
        nonlocal start, cur
        if start is not None:
            found.add((start, end, cur))
        start, cur = None, None

    for i, v in enumerate(ids):
        if v == outside:
            close(i - 1)
            continue
        kind, typ = letters[v % len(letters)], v // len(letters)
        starts = (start is None or typ != cur or kind in "BS" or
                  (scheme == "IOE" and prev_kind == "E") or
                  (scheme == "IOBES" and prev_kind in "ES"))
        if starts:
            close(i - 1)
            start, cur = i, typ
        prev_kind = kind
        if kind == "S":
            close(i)
    close(len(ids) - 1)
    return found


def counts(infer, label, scheme, num_types, excluded):
    """(inferred, labelled, correct) over a list of sequence pairs."""
    n_inf = n_lab = n_cor = 0
    for a, b in zip(infer, label):
        ca = {c for c in chunks(a, scheme, num_types) if c[2] not in excluded}
        cb = {c for c in chunks(b, scheme, num_types) if c[2] not in excluded}
        n_inf, n_lab, n_cor = n_inf + len(ca), n_lab + len(cb), \
            n_cor + len(ca & cb)
    return n_inf, n_lab, n_cor


def test_the_reference_decoder_on_iob_by_hand():
    # IOB, 2 types: B0=0 I0=1 B1=2 I1=3 O=4.
    assert chunks([0, 1, 4, 2, 3, 1], "IOB", 2) == {
        (0, 1, 0), (3, 4, 1), (5, 5, 0)}
    assert chunks([1, 1, 0, 4], "IOB", 2) == {(0, 1, 0), (2, 2, 0)}
    # IOE, 1 type: I=0 E=1 O=2; IOBES: B=0 I=1 E=2 S=3 O=4.
    assert chunks([0, 1, 0, 0, 2, 1], "IOE", 1) == {(0, 1, 0), (2, 3, 0),
                                                     (5, 5, 0)}
    assert chunks([3, 0, 1, 2, 2, 1, 4], "IOBES", 1) == {
        (0, 0, 0), (1, 3, 0), (4, 4, 0), (5, 5, 0)}


def _run(seqs_inf, seqs_lab, scheme, num_types, excluded, padded):
    main, startup = fluid.Program(), fluid.Program()
    lengths = [len(s) for s in seqs_lab]
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        if padded:
            width = max(lengths + [1])
            inf = L.data("inf", [width], dtype="int64")
            lab = L.data("lab", [width], dtype="int64")
            n = L.data("len", [-1], append_batch_size=False, dtype="int64")
            outs = L.chunk_eval(inf, lab, scheme, num_types, excluded, n)
        else:
            inf = L.data("inf", [1], dtype="int64", lod_level=1)
            lab = L.data("lab", [1], dtype="int64", lod_level=1)
            outs = L.chunk_eval(inf, lab, chunk_scheme=scheme,
                                num_chunk_types=num_types,
                                excluded_chunk_types=excluded)
    if padded:
        def pad(seqs):
            return np.array([list(s) + [0] * (width - len(s))
                             for s in seqs], np.int64)
        feed = {"inf": pad(seqs_inf), "lab": pad(seqs_lab),
                "len": np.array(lengths, np.int64)}
    else:
        def lod(seqs):
            flat = np.concatenate([np.asarray(s, np.int64) for s in seqs])
            return fluid.create_lod_tensor(flat.reshape(-1, 1), [lengths])
        feed = {"inf": lod(seqs_inf), "lab": lod(seqs_lab)}
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()  # its own: the global one is other tests' too
    exe.run(startup, scope=scope)
    return [np.asarray(v).ravel()[0]
            for v in exe.run(main, feed=feed, fetch_list=list(outs),
                             scope=scope)]


@pytest.mark.parametrize("scheme", sorted(TAGS))
@pytest.mark.parametrize("padded", [False, True])
def test_chunk_eval_counts_what_the_reference_counts(scheme, padded):
    rs = np.random.RandomState(len(scheme) + 7 * padded)
    num_types = 3
    top = num_types * len(TAGS[scheme])       # the O tag
    for trial in range(6):
        lengths = rs.randint(0, 12, size=rs.randint(1, 6))
        lab = [rs.randint(0, top + 1, size=n) for n in lengths]
        # Inference: the labels with a few tags changed, so most agree.
        inf = [np.where(rs.rand(n) < 0.25, rs.randint(0, top + 1, size=n),
                        s) for n, s in zip(lengths, lab)]
        excluded = [1] if trial % 2 else []
        got = _run(inf, lab, scheme, num_types, excluded, padded)
        n_inf, n_lab, n_cor = counts(inf, lab, scheme, num_types,
                                     set(excluded))
        assert [int(v) for v in got[3:]] == [n_inf, n_lab, n_cor]
        p = n_cor / n_inf if n_inf else 0.0
        r = n_cor / n_lab if n_lab else 0.0
        f1 = 2 * p * r / (p + r) if n_cor else 0.0
        np.testing.assert_allclose(got[:3], [p, r, f1], rtol=1e-6)


def test_chunk_evaluator_sums_the_layers_counts():
    rs = np.random.RandomState(5)
    metric = fluid.metrics.ChunkEvaluator()
    totals = np.zeros(3, np.int64)
    for _ in range(3):
        lab = [rs.randint(0, 5, size=n) for n in (4, 7, 2)]
        inf = [np.where(rs.rand(len(s)) < 0.3, 4, s) for s in lab]
        got = _run(inf, lab, "IOB", 2, [], False)
        metric.update(*got[3:])
        totals += np.array(counts(inf, lab, "IOB", 2, set()))
    n_inf, n_lab, n_cor = totals
    p, r, f1 = metric.eval()
    assert p == pytest.approx(n_cor / n_inf)
    assert r == pytest.approx(n_cor / n_lab)
    assert f1 == pytest.approx(2 * p * r / (p + r))


def test_chunk_eval_errors():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        inf = L.data("inf", [1], dtype="int64", lod_level=1)
        with pytest.raises(ValueError, match="chunk_scheme"):
            L.chunk_eval(inf, inf, "BIO", 2)
        with pytest.raises(TypeError, match="excluded_chunk_types"):
            L.chunk_eval(inf, inf, "IOB", 2, excluded_chunk_types="1")
