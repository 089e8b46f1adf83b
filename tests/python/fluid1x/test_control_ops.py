"""The compare and logical layers against NumPy (bool outputs, broadcast
of y, writing into cond), increment on int64 counters, and tensor arrays
(array_write / array_read / array_length) with their errors."""
import numpy as np
import pytest

import fluid


def run(build, feed):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fetch = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.core.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        return exe.run(main, feed=feed, fetch_list=list(fetch))


COMPARE = {"less_than": np.less, "less_equal": np.less_equal,
           "greater_than": np.greater, "greater_equal": np.greater_equal,
           "equal": np.equal, "not_equal": np.not_equal}


@pytest.mark.parametrize("name", sorted(COMPARE))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_compare_matches_numpy(name, dtype):
    rng = np.random.RandomState(3)
    xv = rng.randint(-2, 3, size=(4, 3)).astype(dtype)
    yv = rng.randint(-2, 3, size=(3,)).astype(dtype)

    def build():
        x = fluid.layers.data("x", [3], dtype=dtype)
        y = fluid.layers.data("y", [3], dtype=dtype, append_batch_size=False)
        return [getattr(fluid.layers, name)(x, y)]

    out, = run(build, {"x": xv, "y": yv})
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, COMPARE[name](xv, yv))


def test_logical_ops_match_numpy():
    a = np.array([[True, False], [True, True]])
    b = np.array([[False, False], [True, False]])

    def build():
        x = fluid.layers.data("a", [2, 2], dtype="bool",
                              append_batch_size=False)
        y = fluid.layers.data("b", [2, 2], dtype="bool",
                              append_batch_size=False)
        return [fluid.layers.logical_and(x, y), fluid.layers.logical_or(x, y),
                fluid.layers.logical_xor(x, y), fluid.layers.logical_not(x)]

    got = run(build, {"a": a, "b": b})
    for g, want in zip(got, [a & b, a | b, a ^ b, ~a]):
        np.testing.assert_array_equal(g, want)


def test_counter_condition_and_arrays():
    xv = np.arange(6, dtype="float32").reshape(2, 3)

    def build():
        x = fluid.layers.data("x", [2, 3], append_batch_size=False)
        i = fluid.layers.fill_constant([1], "int64", 0)
        n = fluid.layers.fill_constant([1], "int64", 2)
        arr = fluid.layers.create_array("float32")
        fluid.layers.array_write(x, i, array=arr)
        fluid.layers.increment(i)
        fluid.layers.array_write(x * 2.0, i, array=arr)
        cond = fluid.layers.less_than(i, n)
        back = fluid.layers.array_read(arr, i)
        return [i, cond, back, fluid.layers.array_length(arr)]

    i, cond, back, length = run(build, {"x": xv})
    assert i.tolist() == [1] and cond.tolist() == [True]
    np.testing.assert_array_equal(back, xv * 2)
    assert length.tolist() == [2]


def test_read_past_the_end_names_the_index():
    def build():
        x = fluid.layers.data("x", [2], append_batch_size=False)
        i = fluid.layers.fill_constant([1], "int64", 0)
        j = fluid.layers.fill_constant([1], "int64", 4)
        arr = fluid.layers.array_write(x, i)
        return [fluid.layers.array_read(arr, j)]

    with pytest.raises(Exception, match="I is 4.*holds 1 tensors"):
        run(build, {"x": np.ones(2, "float32")})
