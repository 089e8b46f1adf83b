"""fluid.layers' creation layers (zeros, ones, zeros_like, ones_like,
uniform_random, gaussian_random and their _batch_size_like forms, range,
linspace, eye, diag) and has_inf, has_nan and isfinite through
fluid.Executor: values against NumPy, the same draws for the same seed (in
a second run and in a second program), no gradient through them, and the
errors their bad arguments give."""
import numpy as np
import pytest

import fluid

L = fluid.layers
_SCOPES = []


def _run(build, feed=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        outs = build()
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    first = exe.run(main, feed=feed or {}, fetch_list=outs, scope=scope)
    second = exe.run(main, feed=feed or {}, fetch_list=outs, scope=scope)
    return first, second


def test_constant_fills():
    x = np.arange(6, dtype="float32").reshape(2, 3)
    (z, o, zl, ol, oi), _ = _run(lambda: [
        L.zeros([2, 3], "float32"), L.ones([4], "int64"),
        L.zeros_like(L.data("x", [3])), L.ones_like(L.data("y", [3])),
        L.ones([2], np.int32)], {"x": x, "y": x})
    np.testing.assert_array_equal(z, np.zeros((2, 3), "float32"))
    assert o.dtype == np.int64 and (o == 1).all() and o.shape == (4,)
    np.testing.assert_array_equal(zl, np.zeros_like(x))
    np.testing.assert_array_equal(ol, np.ones_like(x))
    assert oi.dtype == np.int32


def test_like_layers_write_into_out():
    x = np.ones((2, 3), "float32") * 5

    def build():
        v = L.data("x", [3])
        target = L.fill_constant([2, 3], "float32", 7.0)
        L.zeros_like(v, out=target)
        return target
    (got,), _ = _run(build, {"x": x})
    np.testing.assert_array_equal(got, np.zeros((2, 3), "float32"))


def test_random_layers_repeat_for_a_seed():
    """Seeded draws repeat across runs and programs; seed 0 draws repeat
    across runs and programs of the same names too (the seed is derived
    from the output's name), and two seed-0 layers differ."""
    def build():
        return [L.uniform_random([3, 4], min=-2.0, max=3.0, seed=5),
                L.gaussian_random([1000], mean=1.0, std=2.0, seed=5,
                                  dtype="float64"),
                L.uniform_random([3, 4]), L.uniform_random([3, 4])]
    first, second = _run(build)
    again, _ = _run(build)
    for a, b, c in zip(first, second, again):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    u, g, s0, s1 = first
    assert u.dtype == np.float32 and u.min() >= -2 and u.max() < 3
    assert g.dtype == np.float64 and abs(g.mean() - 1) < 0.2
    assert abs(g.std() - 2) < 0.2
    assert not np.array_equal(s0, s1)


def test_random_batch_size_like():
    x = np.zeros((5, 2), "float32")
    (u, g), _ = _run(lambda: [
        L.uniform_random_batch_size_like(L.data("x", [2]), [-1, 3], seed=2,
                                         min=0.0, max=0.5),
        L.gaussian_random_batch_size_like(L.data("y", [2]), [4, -1],
                                          output_dim_idx=1, seed=3)],
        {"x": x, "y": x})
    assert u.shape == (5, 3) and u.min() >= 0 and u.max() < 0.5
    assert g.shape == (4, 5)
    (plain,), _ = _run(lambda: L.uniform_random([5, 3], min=0.0, max=0.5,
                                                seed=2))
    np.testing.assert_array_equal(u, plain)


def test_range_linspace_eye_diag():
    (r, rf, ls, e, eb, d, dn), _ = _run(lambda: [
        L.range(0, 10, 3, "int64"), L.range(1.0, 0.0, -0.25, "float64"),
        L.linspace(0, 1, 5, "float32"), L.eye(2, 3, dtype="int32"),
        L.eye(2, batch_shape=[3]),
        L.diag(L.assign(np.array([1, 2, 3], "int64"))),
        L.diag(np.array([0.5, 1.5], "float32"))])
    np.testing.assert_array_equal(r, np.arange(0, 10, 3))
    np.testing.assert_allclose(rf, np.arange(1.0, 0.0, -0.25))
    np.testing.assert_allclose(ls, np.linspace(0, 1, 5, dtype="float32"))
    np.testing.assert_array_equal(e, np.eye(2, 3, dtype="int32"))
    np.testing.assert_array_equal(eb, np.stack([np.eye(2, dtype="f4")] * 3))
    np.testing.assert_array_equal(d, np.diag([1, 2, 3]))
    np.testing.assert_array_equal(dn, np.diag(np.float32([0.5, 1.5])))


@pytest.mark.parametrize("values,inf,nan,finite", [
    ([1.0, 2.0], False, False, True), ([1.0, np.inf], True, False, False),
    ([np.nan, -np.inf], True, True, False), ([np.nan, 1.0], False, True,
                                             False)])
def test_finite_tests(values, inf, nan, finite):
    x = np.array([values], "float32")

    def build():
        v = L.data("x", [len(values)])
        return [L.has_inf(v), L.has_nan(v), L.isfinite(v)]
    (a, b, c), _ = _run(build, {"x": x})
    assert a.dtype == np.bool_ and a.shape == (1,)
    assert (a[0], b[0], c[0]) == (inf, nan, finite)


def test_creation_outputs_take_no_gradient():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4])
        h = L.fc(x, 4)
        noise = L.gaussian_random_batch_size_like(h, [-1, 4], seed=1)
        loss = L.mean(L.elementwise_add(L.elementwise_mul(h, noise),
                                        L.ones_like(h)))
        fluid.optimizer.SGD(0.1).minimize(loss)
    types = main.op_types()
    assert "gaussian_random_batch_size_like" in types
    assert not [t for t in types if t.startswith(("gaussian_random",
                                                  "fill_any_like"))
                and t.endswith("_grad")], types
    assert not [v for v in main.global_block().vars
                if v.startswith(noise.name + "@GRAD")]


def test_bad_arguments_raise_clear_errors():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        v = L.data("x", [4])
        with pytest.raises(TypeError, match="range\\(end=a Variable\\)"):
            L.range(0, v, 1, "int64")
        with pytest.raises(Exception, match="step"):
            L.range(0, 5, 0, "int64")
        with pytest.raises(Exception, match="points away"):
            L.range(0, 5, -1, "int64")
        with pytest.raises(Exception, match="num=0"):
            L.linspace(0, 1, 0, "float32")
        with pytest.raises(Exception, match="min.*exceeds"):
            L.uniform_random([2], min=1.0, max=0.0)
        with pytest.raises(Exception, match="float32 or float64"):
            L.gaussian_random([2], dtype="int64")
        with pytest.raises(Exception, match="num_rows=-1"):
            L.eye(-1)
        with pytest.raises(Exception, match="only float tensors"):
            L.has_nan(L.data("i", [2], dtype="int64"))
        with pytest.raises(TypeError, match="shape"):
            L.zeros(5, "float32")
