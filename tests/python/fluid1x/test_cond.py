"""fluid.layers.cond (Fluid 1.8) and fluid.layers.Switch: the loss and the
gradients of a branch built in a conditional block equal the same layers
written without control flow (float64, 1e-10), for pred true and false; a
numeric gradient check; nested lists/tuples of results; a piecewise
learning rate built with Switch against its closed form; the errors."""
import numpy as np
import pytest

import fluid

L = fluid.layers


def _fc(h, name):
    return L.fc(h, size=3, act=None, bias_attr=False,
                param_attr=fluid.ParamAttr(
                    name=name, initializer=fluid.initializer.UniformInitializer(
                        -1.0, 1.0, seed=11 if name == "wt" else 13)))


def _true(x):
    return L.tanh(_fc(x, "wt"))


def _false(x):
    return L.scale(_fc(x, "wf"), 2.0) + x


def _net(mode, flag):
    """mode: "cond" (both branches, pred fed) or "plain" (the branch that
    flag picks, written straight)."""
    x = L.data("x", [3], dtype="float64", stop_gradient=False)
    if mode == "plain":
        y = _true(x) if flag else _false(x)
        return L.mean(L.elementwise_mul(y, y))
    pred = L.data("pred", [1], dtype="bool", append_batch_size=False)
    out = L.cond(pred, lambda: _true(x), lambda: _false(x))
    return L.mean(L.elementwise_mul(out, out))


X = np.random.RandomState(5).uniform(-1, 1, (4, 3))


def _run(mode, flag, x=X, train=True):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        loss = _net(mode, flag)
        if train:
            fluid.optimizer.SGD(0.1).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    feed = {"x": x}
    if mode == "cond":
        feed["pred"] = np.array([flag])
    grads = ["wt@GRAD" if flag else "wf@GRAD", "x@GRAD"]
    if mode == "cond":
        grads.append("wf@GRAD" if flag else "wt@GRAD")
    fetch = [loss] + (grads if train else [])
    return main, exe.run(main, feed=feed, fetch_list=fetch, scope=scope)


@pytest.mark.parametrize("flag", [True, False])
def test_cond_matches_plain_branch(flag):
    main, got = _run("cond", flag)
    _, want = _run("plain", flag)
    assert len(want) == 3 and len(got) == 4
    for g, w, what in zip(got, want, ["loss", "the branch's weight", "x"]):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-10, err_msg=what)
    # The other branch's weight gets a zero gradient.
    assert got[3].shape == (3, 3) and not np.any(got[3])
    types = main.op_types()
    assert types.count("conditional_block") == 2
    assert types.count("conditional_block_grad") == 2


@pytest.mark.parametrize("flag", [True, False])
def test_cond_numeric_gradient(flag):
    _, got = _run("cond", flag)
    analytic = got[2]
    eps = 1e-6
    numeric = np.zeros_like(X)
    for idx in np.ndindex(*X.shape):
        up, down = X.copy(), X.copy()
        up[idx] += eps
        down[idx] -= eps
        lu = _run("cond", flag, up, train=False)[1][0]
        ld = _run("cond", flag, down, train=False)[1][0]
        numeric[idx] = (lu - ld).item() / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)


def test_cond_nested_structure_and_none():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        a = L.fill_constant([2], "float64", 3.0)
        b = L.fill_constant([2], "float64", 5.0)
        pred = L.less_than(L.reduce_sum(a), L.reduce_sum(b))
        out = L.cond(pred, lambda: (a + b, [a * b]),
                     lambda: (a - b, [a]))
        assert isinstance(out, tuple) and isinstance(out[1], list)
        assert L.cond(pred, lambda: None, lambda: None) is None
        assert L.cond(pred, lambda: None) is None
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    s, p = exe.run(main, fetch_list=[out[0], out[1][0]], scope=scope)
    np.testing.assert_array_equal(s, [8.0, 8.0])
    np.testing.assert_array_equal(p, [15.0, 15.0])


def test_cond_errors():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        a = L.fill_constant([2], "float64", 3.0)
        pred = L.less_than(L.reduce_sum(a), L.reduce_sum(a))
        with pytest.raises(TypeError, match="must be one bool"):
            L.cond(a, lambda: a, lambda: a)
        with pytest.raises(TypeError, match="not a Variable"):
            L.cond(True, lambda: a, lambda: a)
        with pytest.raises(TypeError, match="false_fn=3"):
            L.cond(pred, lambda: a, 3)
        with pytest.raises(ValueError, match="different structures"):
            L.cond(pred, lambda: [a, a], lambda: (a, a))
        with pytest.raises(ValueError, match="different structures"):
            L.cond(pred, lambda: [a, a], lambda: [a])
        with pytest.raises(ValueError, match="true_fn returned Variables"):
            L.cond(pred, lambda: a, lambda: None)
        with pytest.raises(ValueError, match="true_fn returned Variables"):
            L.cond(pred, lambda: a)
        with pytest.raises(TypeError, match="same dtypes"):
            L.cond(pred, lambda: a, lambda: L.cast(a, "float32"))
        with pytest.raises(TypeError, match="expected a Variable"):
            L.cond(pred, lambda: 3, lambda: 3)


BOUNDS, VALUES = [3, 6], [1.0, 0.5, 0.1]


def test_switch_piecewise_learning_rate():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        step = L.create_global_var([1], 0.0, "float32", persistable=True,
                                   name="step")
        L.increment(step, 1.0)
        lr = L.create_global_var([1], 0.0, "float32", persistable=True,
                                 name="lr")
        with L.Switch() as switch:
            for bound, value in zip(BOUNDS, VALUES):
                b = L.fill_constant([1], "float32", float(bound))
                with switch.case(L.less_equal(step, b)):
                    L.fill_constant([1], "float32", value, out=lr)
            with switch.default():
                L.fill_constant([1], "float32", VALUES[-1], out=lr)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    for k in range(1, 10):
        got, = exe.run(main, fetch_list=[lr], scope=scope)
        want = VALUES[int(np.searchsorted(BOUNDS, k))]
        assert got[0] == np.float32(want), (k, got, want)


def test_switch_first_true_case_wins_and_errors():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        out = L.create_global_var([1], 0.0, "float32", name="out")
        one = L.fill_constant([1], "float32", 1.0)
        yes = L.equal(one, one)
        with L.Switch() as switch:
            with switch.case(yes):
                L.fill_constant([1], "float32", 1.0, out=out)
            with switch.case(yes):
                L.fill_constant([1], "float32", 2.0, out=out)
            with switch.default():
                L.fill_constant([1], "float32", 3.0, out=out)
            with pytest.raises(ValueError, match="default must be the last"):
                with switch.case(yes):
                    pass
        with pytest.raises(ValueError, match="inside `with"):
            with L.Switch().case(yes):
                pass
        with pytest.raises(TypeError, match="must be one bool"):
            with L.Switch() as s2:
                with s2.case(out):
                    pass
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    got, = exe.run(main, fetch_list=[out], scope=scope)
    assert got[0] == 1.0


def test_switch_default_alone_runs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        out = L.create_global_var([1], 0.0, "float32", name="out")
        with L.Switch() as switch:
            with switch.default():
                L.fill_constant([1], "float32", 3.0, out=out)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    got, = exe.run(main, fetch_list=[out], scope=scope)
    assert got[0] == 3.0
