"""LoD of several levels (Fluid's nested sequences: paragraphs ->
sentences -> words) through the Python API and the executor: the
LoDTensor's levels, their checks, a feed of lod_level 2 fetched back with
both levels after ops that keep rows, sequence_pool pooling the finest
level and keeping the one above (twice pooled, against NumPy),
sequence_expand by a chosen level, the errors naming the feed, and a
rank table refusing several levels."""
import numpy as np
import pytest

import fluid

L = fluid.layers
LENGTHS = [[2, 1], [1, 3, 2]]  # 2 paragraphs: of 2 and 1 sentences
OFFSETS = [[0, 2, 3], [0, 1, 4, 6]]


def _run(build, feed, fetch=()):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        outs = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=list(outs) + list(fetch),
                   return_numpy=False, scope=scope)


def test_lod_tensor_levels():
    x = np.arange(12, dtype="float32").reshape(6, 2)
    t = fluid.create_lod_tensor(x, LENGTHS, fluid.CPUPlace())
    assert t.recursive_sequence_lengths() == LENGTHS
    assert t.lod() == OFFSETS
    assert t.has_valid_recursive_sequence_lengths()
    u = fluid.LoDTensor()
    u.set(x, fluid.CPUPlace())
    u.set_lod(OFFSETS)
    assert u.recursive_sequence_lengths() == LENGTHS
    u.set_recursive_sequence_lengths([[2, 2], [1, 3, 2]])  # 4 != 3 below
    assert not u.has_valid_recursive_sequence_lengths()
    with pytest.raises(ValueError, match=r"level 0 of 2\): the sequence "
                       "lengths sum to 4 but the level below has 3"):
        fluid.create_lod_tensor(x, [[2, 2], [1, 3, 2]], fluid.CPUPlace())
    with pytest.raises(ValueError, match="sum to 7 but the data has 6 rows"):
        fluid.create_lod_tensor(x, [[2, 1], [1, 3, 3]], fluid.CPUPlace())
    r = fluid.create_random_int_lodtensor(LENGTHS, [1], fluid.CPUPlace(),
                                          0, 9)
    assert r.shape() == [6, 1] and r.lod() == OFFSETS


def test_two_levels_fed_kept_by_row_ops_and_pooled_twice():
    x = np.random.RandomState(1).uniform(-1, 1, (6, 3))

    def build():
        words = L.data("words", [3], dtype="float64", lod_level=2)
        h = L.scale(L.tanh(words), scale=2.0)   # rows kept: both levels
        sentences = L.sequence_pool(h, "sum")   # one row per sentence
        paragraphs = L.sequence_pool(sentences, "max")
        assert sentences.lod_level == 1 and paragraphs.lod_level == 0
        return [h, sentences, paragraphs]
    h, sentences, paragraphs = _run(
        build, {"words": fluid.create_lod_tensor(x, LENGTHS,
                                                 fluid.CPUPlace())})
    assert h.lod() == OFFSETS
    np.testing.assert_allclose(np.array(h), 2 * np.tanh(x), rtol=1e-12)
    assert sentences.lod() == [OFFSETS[0]]
    rows = 2 * np.tanh(x)
    want_s = np.stack([rows[a:b].sum(0) for a, b in
                       zip(OFFSETS[1], OFFSETS[1][1:])])
    np.testing.assert_allclose(np.array(sentences), want_s, rtol=1e-12)
    want_p = np.stack([want_s[a:b].max(0) for a, b in
                       zip(OFFSETS[0], OFFSETS[0][1:])])
    assert paragraphs.lod() == []
    np.testing.assert_allclose(np.array(paragraphs), want_p, rtol=1e-12)


@pytest.mark.parametrize("ref_level,want_rows", [(-1, [0, 0, 1, 1, 1, 2]),
                                                 (0, [0, 0, 1])])
def test_sequence_expand_by_a_level(ref_level, want_rows):
    def build():
        x = L.data("x", [2], dtype="float64")
        y = L.data("y", [1], dtype="float32", lod_level=2)
        return [L.sequence_expand(x, y, ref_level=ref_level)]
    rows = 3 if ref_level == -1 else 2
    x = np.arange(rows * 2, dtype="float64").reshape(rows, 2)
    y = fluid.create_lod_tensor(np.zeros((6, 1), "float32"),
                                [[2, 1], [2, 3, 1]], fluid.CPUPlace())
    out, = _run(build, {"x": x, "y": y})
    np.testing.assert_array_equal(np.array(out), x[want_rows])


def test_a_feed_with_the_wrong_number_of_levels_is_named():
    def build():
        return [L.scale(L.data("words", [3], dtype="float64", lod_level=2))]
    one = fluid.create_lod_tensor(np.zeros((6, 3)), [[1, 3, 2]],
                                  fluid.CPUPlace())
    with pytest.raises(Exception, match="feed 'words' is declared with "
                       "lod_level 2 but was fed 1 level"):
        _run(build, {"words": one})
    with pytest.raises(ValueError, match="level below has 3 sequences"):
        _run(build, {"words": (np.zeros((6, 3)), [[2, 2], [1, 3, 2]])})


def test_a_rank_table_of_several_levels_is_refused():
    # Fluid ranks level 0 of such an x by its sub-sequences; here a rank
    # table (and DynamicRNN) runs over a one-level batch, and says so.
    def build():
        x = L.data("x", [1], dtype="float32", lod_level=2)
        return [L.max_sequence_len(L.lod_rank_table(x))]
    x = fluid.create_lod_tensor(np.zeros((6, 1), "float32"), LENGTHS,
                                fluid.CPUPlace())
    with pytest.raises(NotImplementedError, match="has 2 LoD levels"):
        _run(build, {"x": x})
