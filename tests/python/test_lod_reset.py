"""fluid.layers.is_empty, lod_reset and lod_append through the executor:
each output checked against what it must be, computed here (the element
count; X's data with the offsets given by target_lod, y's LoD, y's data,
or level), the gradient of lod_reset (Out@GRAD's data with X's LoD), and
the errors Fluid raises; lod_append on x with LoD adds a level below it,
and lod_reset takes y's two levels whole."""
import numpy as np
import pytest

import fluid

L = fluid.layers


def _run(build, feed, fetch_names=(), return_numpy=False):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        fetch = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()  # its own: the global one is other tests' too
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=list(fetch) + list(fetch_names),
                   return_numpy=return_numpy, scope=scope)


@pytest.mark.parametrize("rows", [0, 3])
def test_is_empty_answers_whether_x_has_elements(rows):
    def build():
        x = L.data("x", [4], dtype="float32")
        one = L.fill_constant([1], "int64", 1)
        cond = L.less_than(one, one)   # a bool [1] var to write into
        return [L.is_empty(x), L.is_empty(x, cond=cond), cond]
    got = _run(build, {"x": np.ones((rows, 4), np.float32)},
               return_numpy=True)
    for v in got:
        assert v.dtype == np.bool_ and v.shape == (1,)
        assert bool(v[0]) == (rows == 0)


def test_is_empty_cond_must_be_a_bool_var():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = L.data("x", [4])
        with pytest.raises(ValueError, match="bool"):
            L.is_empty(x, cond=L.fill_constant([1], "int64", 0))


X = np.arange(10, dtype=np.float64).reshape(5, 2)


def _reset(**kw):
    def build():
        x = L.data("x", [2], dtype="float64", lod_level=1)
        y = kw.pop("y_var")() if "y_var" in kw else None
        out = L.lod_reset(x, y=y, **kw) if y is not None else \
            L.lod_reset(x, **kw)
        return [out]
    return build


@pytest.mark.parametrize("source,feed_y,want", [
    ("target_lod", None, [0, 2, 5]),
    ("y with LoD", fluid.create_lod_tensor(np.zeros((5, 1), np.float32),
                                           [[1, 0, 4]]), [0, 1, 1, 5]),
    ("y int32 offsets", np.array([0, 3, 5], np.int32), [0, 3, 5]),
    ("y int64 offsets", np.array([0, 0, 5], np.int64), [0, 0, 5]),
])
def test_lod_reset_takes_each_source(source, feed_y, want):
    if source == "target_lod":
        build = _reset(target_lod=[0, 2, 5])
    elif source == "y with LoD":
        build = _reset(y_var=lambda: L.data("y", [1], lod_level=1))
    else:
        dtype = str(feed_y.dtype)
        build = _reset(y_var=lambda: L.data(
            "y", [-1], append_batch_size=False, dtype=dtype))
    feed = {"x": fluid.create_lod_tensor(X, [[5]])}
    if feed_y is not None:
        feed["y"] = feed_y
    out, = _run(build, feed)
    np.testing.assert_array_equal(np.array(out), X)
    assert out.lod() == [want]


def test_lod_reset_gradient_is_out_grad_with_x_lod():
    def build():
        x = L.data("x", [2], dtype="float64", lod_level=1,
                   stop_gradient=False)
        r = L.data("r", [2], dtype="float64")
        # A parameter, for minimize to append the backward pass to.
        w = L.create_parameter([2], "float64", name="w",
                               default_initializer=fluid.initializer.
                               Constant(1.0))
        out = L.lod_reset(L.elementwise_mul(x, w), target_lod=[0, 4, 5])
        loss = L.reduce_sum(L.elementwise_mul(out, r))
        fluid.optimizer.SGD(0.1).minimize(loss)  # appends the backward
        return [out]
    r = np.random.RandomState(1).uniform(-1, 1, (5, 2))
    out, dx = _run(build, {"x": fluid.create_lod_tensor(X, [[2, 3]]),
                           "r": r}, ["x@GRAD"])
    assert out.lod() == [[0, 4, 5]]
    np.testing.assert_array_equal(np.array(dx), r)  # w is 1


def test_lod_append_gives_x_without_lod_its_level():
    def build():
        x = L.data("x", [2], dtype="float64")
        lv = L.data("lv", [-1], append_batch_size=False, dtype="int64")
        return [L.lod_append(x, [0, 1, 5]),
                L.lod_append(x, (np.int64(0), np.int64(5))),  # NumPy ints
                L.lod_append(x, lv)]
    outs = _run(build, {"x": X, "lv": np.array([0, 2, 2, 5], np.int64)})
    for out, want in zip(outs, [[0, 1, 5], [0, 5], [0, 2, 2, 5]]):
        np.testing.assert_array_equal(np.array(out), X)
        assert out.lod() == [want]


def test_lod_append_adds_a_level_below_x_lod():
    # As Fluid's example: x's level then counts the new level's sequences,
    # here one per row; a level that does not fit under x's is refused.
    def build(level):
        return lambda: [L.lod_append(L.data("x", [2], dtype="float64",
                                            lod_level=1), level)]
    x = fluid.create_lod_tensor(X, [[2, 3]])
    out, = _run(build([0, 1, 2, 3, 4, 5]), {"x": x})
    np.testing.assert_array_equal(np.array(out), X)
    assert out.lod() == [[0, 2, 5], [0, 1, 2, 3, 4, 5]]
    assert out.recursive_sequence_lengths() == [[2, 3], [1] * 5]
    with pytest.raises(ValueError, match="level below has 2 sequences"):
        _run(build([0, 1, 5]), {"x": x})


def test_lod_reset_takes_y_two_levels_whole():
    def build():
        x = L.data("x", [2], dtype="float64")
        y = L.data("y", [1], dtype="float32", lod_level=2)
        return [L.lod_reset(x, y=y)]
    y = fluid.create_lod_tensor(np.zeros((5, 1), np.float32),
                                [[2, 1], [1, 3, 1]])
    out, = _run(build, {"x": X, "y": y})
    np.testing.assert_array_equal(np.array(out), X)
    assert out.lod() == [[0, 2, 3], [0, 1, 4, 5]]


def test_errors():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = L.data("x", [2], dtype="float64")
        with pytest.raises(ValueError, match="both None"):
            L.lod_reset(x)
        with pytest.raises(ValueError, match="must be a list"):
            L.lod_append(x, 3)
        with pytest.raises(TypeError, match="list of int offsets"):
            L.lod_reset(x, target_lod=[0, 1.5])
        with pytest.raises(ValueError, match="start at 0"):
            L.lod_reset(x, target_lod=[1, 2])
    def build():
        x = L.data("x", [2], dtype="float64")
        return [L.lod_reset(x, target_lod=[0, 2, 4])]
    with pytest.raises(ValueError, match="end at 4 but the data has 5 rows"):
        _run(build, {"x": X})
