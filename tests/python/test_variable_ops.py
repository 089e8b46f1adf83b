"""Arithmetic on Variables (+ - * / and unary -) and the elementwise
layers: values against NumPy through the executor, gradients through one
SGD step, clear errors for operands that are neither a Variable nor a
number."""
import numpy as np
import pytest

import fluid

L = fluid.layers

_SCOPES = []  # kept alive until the end of the session (see test_executor)


def run(main, startup, feed, fetch):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope), scope


def test_operators_match_numpy():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 4], dtype="float64")
        y = L.data("y", [4], dtype="float64", append_batch_size=False)
        exprs = [x + y, x - y, x * y, x / y, x + x,
                 x + 2, 2 + x, x - 2, 2 - x, x * 3, 3 * x, x / 4, 4 / x,
                 -x, 2.5 - (x * y) / 0.5]
    rng = np.random.RandomState(0)
    xv = rng.uniform(0.5, 2, (2, 3, 4))
    yv = rng.uniform(0.5, 2, (4,))
    want = [xv + yv, xv - yv, xv * yv, xv / yv, xv + xv,
            xv + 2, 2 + xv, xv - 2, 2 - xv, xv * 3, 3 * xv, xv / 4, 4 / xv,
            -xv, 2.5 - (xv * yv) / 0.5]
    got, _ = run(main, startup, {"x": xv, "y": yv}, exprs)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == np.float64, i
        np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=str(i))


def test_scalar_operators_use_scale_and_fill_constant():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3])
        n = len(main.op_types())
        x + 1, 1 - x, x * 2, x / 2, -x
        assert main.op_types()[n:] == ["scale"] * 5
        n = len(main.op_types())
        2 / x
        assert main.op_types()[n:] == ["fill_constant", "elementwise_pow",
                                       "scale"]
        n = len(main.op_types())
        x - x
        assert main.op_types()[n:] == ["elementwise_sub"]


def test_elementwise_layers_match_numpy():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 4], dtype="float64")
        y = L.data("y", [3], dtype="float64", append_batch_size=False)
        outs = [L.elementwise_sub(x, y, axis=1),
                L.elementwise_div(x, y, axis=1),
                L.elementwise_max(x, y, axis=1),
                L.elementwise_min(x, y, axis=1, act="relu"),
                L.elementwise_pow(x, y, axis=1),
                L.elementwise_mul(x, y, axis=1, name="prod")]
    assert outs[5].name.startswith("prod")
    rng = np.random.RandomState(1)
    xv = rng.uniform(0.5, 2, (2, 3, 4))
    yv = rng.uniform(-1.5, 1.5, (3,))
    yb = yv.reshape(1, 3, 1)
    want = [xv - yb, xv / yb, np.maximum(xv, yb),
            np.maximum(np.minimum(xv, yb), 0), xv ** yb, xv * yb]
    got, _ = run(main, startup, {"x": xv, "y": yv}, outs)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=str(i))


def test_gradients_flow_through_operators():
    """One SGD step on loss = mean(f(x @ w)), f written with operators,
    against the step NumPy takes with f' by hand."""
    lr = 0.125  # exact in float32, the dtype of the learning rate
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4], dtype="float64")
        h = L.fc(x, 3, bias_attr=False, param_attr=L.ParamAttr(
            name="w", initializer={"kind": "constant", "value": 0.25}))
        two = L.fill_constant([1], "float64", 2.0)
        e = (2 / (h + 3) - h * h + (1 - h) / 4 + (-h) * 0.5
             + L.elementwise_max(h, two) + L.elementwise_pow(h, two))
        loss = L.mean(e)
        fluid.optimizer.SGD(lr).minimize(loss)
    rng = np.random.RandomState(2)
    xv = rng.uniform(0, 1, (5, 4))
    w0 = np.full((4, 3), 0.25)
    hv = xv @ w0
    # hv is below 2 everywhere, so max(h, 2) sends nothing to h.
    assert (hv < 2).all()
    dfdh = (-2 / (hv + 3) ** 2 - 2 * hv - 0.25 - 0.5 + 0 + 2 * hv)
    dw = xv.T @ (dfdh / hv.size)
    (lv,), scope = run(main, startup, {"x": xv}, [loss])
    want_loss = np.mean(2 / (hv + 3) - hv * hv + (1 - hv) / 4 - 0.5 * hv
                        + 2 + hv * hv)
    np.testing.assert_allclose(lv, [want_loss], rtol=1e-12)
    np.testing.assert_allclose(scope.get("w"), w0 - lr * dw, rtol=1e-12)


@pytest.mark.parametrize("bad", ["a", [1.0], None, True, np.ones(3)])
def test_bad_operands_name_the_operator(bad):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3])
        for op, fn in [("+", lambda: x + bad), ("-", lambda: bad - x),
                       ("*", lambda: x * bad), ("/", lambda: bad / x)]:
            with pytest.raises(TypeError,
                               match=r"unsupported operand types for "
                               + "\\" + op):
                fn()
