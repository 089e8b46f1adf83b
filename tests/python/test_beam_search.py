"""fluid.layers.beam_search and beam_search_decode in a decoding loop
written as chapter 08 of the Fluid book writes it (While over tensor
arrays, topk, the accumulated log-probabilities, beam_search, then
beam_search_decode), on a fixed bigram table of probabilities (no
training): beam_size 1 decodes greedily, a beam wider than every
hypothesis finds the brute-force best (and every hypothesis, best first);
and the layers' errors. Each check runs with the starts fed as Fluid's book
feeds them (two LoD levels, [[1] * N, [1] * N], the sentences read from
lod()[0] source -> hypotheses and lod()[1] hypothesis -> tokens) and in
this package's one-level form; both decode the same."""
import itertools

import numpy as np
import pytest

import fluid

L = fluid.layers
V, END = 5, 4            # vocabulary; the end token


def bigram(seed, end_weight=1.0):
    """P(next | last), rows normalised; float32 as Fluid's decoder.
    end_weight < 1 makes ending less likely (longer sentences)."""
    rng = np.random.RandomState(seed)
    p = np.exp(rng.uniform(-3, 3, (V, V)))
    p[:, END] *= end_weight
    return (p / p.sum(1, keepdims=True)).astype("float32")


def build_decoder(beam_size, max_len, logits=False, levels=2):
    """Chapter 08's loop, the decoder's softmax replaced by a table lookup
    (embedding of the last id into the table "lm": probabilities, or with
    logits=True logits that a softmax turns into them)."""
    init_ids = L.data("init_ids", [1], dtype="int64", lod_level=levels)
    init_scores = L.data("init_scores", [1], dtype="float32",
                         lod_level=levels)
    counter = L.fill_constant([1], "int64", 0)
    array_len = L.fill_constant([1], "int64", max_len)
    ids_array = L.create_array("int64")
    scores_array = L.create_array("float32")
    L.array_write(init_ids, i=counter, array=ids_array)
    L.array_write(init_scores, i=counter, array=scores_array)
    cond = L.less_than(counter, array_len)
    loop = L.While(cond, is_test=True)
    with loop.block():
        pre_ids = L.array_read(ids_array, counter)
        pre_score = L.array_read(scores_array, counter)
        probs = L.embedding(pre_ids, size=[V, V],
                            param_attr=fluid.ParamAttr(name="lm"))
        if logits:
            probs = L.softmax(probs)
        topk_scores, topk_ids = L.topk(probs, k=min(beam_size, V))
        accu = L.elementwise_add(L.log(topk_scores),
                                 L.reshape(pre_score, [-1]), axis=0)
        sel_ids, sel_scores = L.beam_search(pre_ids, pre_score, topk_ids,
                                            accu, beam_size, end_id=END)
        L.increment(counter, value=1, in_place=True)
        L.array_write(sel_ids, i=counter, array=ids_array)
        L.array_write(sel_scores, i=counter, array=scores_array)
        L.less_than(counter, array_len, cond=cond)
    return L.beam_search_decode(ids_array, scores_array, beam_size,
                                end_id=END)


def decode(table, starts, beam_size, max_len, place=None, levels=2):
    """[(sentences, final scores)] per source, as the program decodes."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        sent_ids, sent_scores = build_decoder(beam_size, max_len,
                                              levels=levels)
    place = place or fluid.CPUPlace()
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        scope.find_var("lm").get_tensor().set(table, place)
        n = len(starts)
        lengths = [[1] * n] * levels
        feed = {
            "init_ids": fluid.create_lod_tensor(
                np.array(starts, "int64").reshape(n, 1), lengths, place),
            "init_scores": fluid.create_lod_tensor(
                np.zeros((n, 1), "float32"), lengths, place)}
        ids, scores = exe.run(main, feed=feed,
                              fetch_list=[sent_ids, sent_scores],
                              return_numpy=False)
    tokens, values = np.array(ids), np.array(scores)
    if levels == 2:   # Fluid's form: both carry the same two levels
        assert ids.lod() == scores.lod() and len(ids.lod()) == 2
        return [([list(tokens[a:b]) for a, b in zip(ids.lod()[1][h0:h1],
                                                      ids.lod()[1][h0 + 1:])],
                 [float(values[b - 1]) for b in ids.lod()[1][h0 + 1:h1 + 1]])
                for h0, h1 in zip(ids.lod()[0], ids.lod()[0][1:])]
    sources, hyps = ids.lod()[0], scores.lod()[0]
    out = [([], []) for _ in starts]
    for a, b in zip(hyps, hyps[1:]):
        s = int(np.searchsorted(sources, a, side="right")) - 1
        out[s][0].append(list(tokens[a:b]))
        out[s][1].append(float(values[b - 1]))
    return out


def brute_force(table, start, max_len):
    """Every hypothesis of max_len steps after `start`, cut after its first
    END: {sentence: accumulated log-probability}."""
    logp = np.log(table.astype("float64"))
    found = {}
    for steps in itertools.product(range(V), repeat=max_len):
        sentence, score = [start], 0.0
        for t in steps:
            if sentence[-1] == END:
                break
            score += logp[sentence[-1], t]
            sentence.append(t)
        found[tuple(sentence)] = score
    return found


@pytest.mark.parametrize("levels", [1, 2])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_of_one_is_greedy(seed, levels):
    table = bigram(seed, end_weight=0.2)
    starts, max_len = [0, 1, 2, 3], 5
    got = decode(table, starts, 1, max_len, levels=levels)
    assert max(len(sentences[0]) for sentences, _ in got) > 3
    for s, start in enumerate(starts):
        want, score = [start], 0.0
        while len(want) <= max_len and want[-1] != END:
            nxt = int(np.argmax(table[want[-1]]))
            score += float(np.log(table[want[-1], nxt]))
            want.append(nxt)
        assert got[s][0] == [want], (seed, s)
        assert got[s][1][0] == pytest.approx(score, abs=1e-5)


@pytest.mark.parametrize("levels", [1, 2])
@pytest.mark.parametrize("seed", [3, 4])
def test_wide_beam_finds_the_brute_force_best(seed, levels):
    table = bigram(seed)
    starts, max_len = [0, 2, 3], 3
    got = decode(table, starts, V ** max_len, max_len, levels=levels)
    for s, start in enumerate(starts):
        want = brute_force(table, start, max_len)
        best = max(want, key=want.get)
        sentences, scores = got[s]
        assert tuple(sentences[0]) == best, (seed, s)
        assert scores[0] == pytest.approx(want[best], abs=1e-5)
        # Every hypothesis, each with its score, best first.
        assert sorted(map(tuple, sentences)) == sorted(want)
        for sentence, score in zip(sentences, scores):
            assert score == pytest.approx(want[tuple(sentence)], abs=1e-5)
        assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("levels", [1, 2])
def test_a_middle_beam_keeps_its_best_within_the_brute_force(levels):
    table = bigram(5)
    got = decode(table, [1], 3, 4, levels=levels)
    assert got == decode(table, [1], 3, 4, levels=3 - levels)
    want = brute_force(table, 1, 4)
    sentences, scores = got[0]
    assert 1 <= len(sentences) <= 3
    for sentence, score in zip(sentences, scores):
        assert score == pytest.approx(want[tuple(sentence)], abs=1e-5)
    assert scores == sorted(scores, reverse=True)


def test_errors_name_the_argument():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = L.data("ids", [1], dtype="int64", lod_level=1)
        sc = L.data("sc", [1], dtype="float32", lod_level=1)
        cand = L.data("cand", [3], dtype="float32")
        with pytest.raises(ValueError, match="beam_size=0"):
            L.beam_search(ids, sc, None, cand, 0, end_id=1)
        with pytest.raises(TypeError, match="beam_size=2.5"):
            L.beam_search(ids, sc, None, cand, 2.5, end_id=1)
        with pytest.raises(ValueError, match="level=2"):
            L.beam_search(ids, sc, None, cand, 2, end_id=1, level=2)
        with pytest.raises(Exception, match="pre_ids 'sc'.*int64"):
            L.beam_search(sc, sc, None, cand, 2, end_id=1)
        with pytest.raises(Exception, match="scores 'ids'.*float"):
            L.beam_search(ids, sc, None, ids, 2, end_id=1)
        arr = L.create_array("float32")
        with pytest.raises(Exception, match="Ids '.*' is an array of float32"):
            L.beam_search_decode(arr, arr, 2, end_id=1)
        sel_ids, sel_scores, parent = L.beam_search(
            ids, sc, None, cand, 2, end_id=1, return_parent_idx=True)
        assert parent.dtype == "int32"
        assert sel_ids.lod_level == 1 and sel_scores.dtype == "float32"
