"""The activation layers of fluid.layers with Fluid's attributes: each
builds its op, runs, and matches NumPy (default and given attributes); the
layers with `act=` take each of them (with the op's default attributes),
and an unknown activation names the layer, the argument and the known ones.
"""
import numpy as np
import pytest

import fluid

L = fluid.layers

# Scopes outlive the executors bound to them.
_SCOPES = []


def _softplus(x):
    return np.logaddexp(0.0, x)


# (layer, kwargs, NumPy reference, input range)
CASES = [
    ("leaky_relu", {}, lambda x: np.where(x > 0, x, np.float32(0.02) * x),
     (-3, 3)),
    ("leaky_relu", {"alpha": 0.2},
     lambda x: np.where(x > 0, x, np.float32(0.2) * x), (-3, 3)),
    ("elu", {}, lambda x: np.where(x > 0, x, np.expm1(x)), (-3, 3)),
    ("elu", {"alpha": 0.5},
     lambda x: np.where(x > 0, x, 0.5 * np.expm1(x)), (-3, 3)),
    ("relu6", {}, lambda x: np.clip(x, 0, 6), (-2, 9)),
    ("relu6", {"threshold": 2.5}, lambda x: np.clip(x, 0, 2.5), (-2, 4)),
    ("exp", {}, np.exp, (-3, 3)),
    ("log", {}, np.log, (0.1, 5)),
    ("sqrt", {}, np.sqrt, (0.1, 5)),
    ("square", {}, np.square, (-3, 3)),
    ("abs", {}, np.abs, (-3, 3)),
    ("pow", {}, lambda x: x, (-3, 3)),
    ("pow", {"factor": 3.0}, lambda x: x ** 3, (-2, 2)),
    ("pow", {"factor": 0.5}, np.sqrt, (0.1, 5)),
    ("softplus", {}, _softplus, (-5, 5)),
    ("softsign", {}, lambda x: x / (1 + np.abs(x)), (-4, 4)),
    ("brelu", {}, lambda x: np.clip(x, 0, 24), (-3, 30)),
    ("brelu", {"t_min": -1.0, "t_max": 2.0}, lambda x: np.clip(x, -1, 2),
     (-3, 3)),
]

LAYERS = sorted({c[0] for c in CASES})


def _run(main, startup, feed, fetch):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope)


@pytest.mark.parametrize("layer,kwargs,ref,bounds", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_activation_layer_matches_numpy(layer, kwargs, ref, bounds):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 5], dtype="float64")
        n = len(main.ops())
        y = getattr(L, layer)(x, **kwargs)
    assert main.op_types()[n:] == [layer]
    assert main.ops()[-1]["inputs"] == {"X": ["x"]}
    assert y.shape == (-1, 3, 5)
    assert y.dtype == "float64"
    xv = np.random.RandomState(len(layer)).uniform(*bounds, size=(4, 3, 5))
    (out,) = _run(main, startup, {"x": xv}, [y])
    np.testing.assert_allclose(out, ref(xv), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("layer", LAYERS)
def test_float32_and_name(layer):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [6])
        y = getattr(L, layer)(x, name="my_act")
        z = getattr(L, layer)(x)
    assert y.name.startswith("my_act")
    assert z.name.startswith(layer)
    assert y.name != z.name
    assert y.dtype == "float32"
    ref = next(c[2] for c in CASES if c[0] == layer and not c[1])
    bounds = next(c[3] for c in CASES if c[0] == layer and not c[1])
    xv = np.random.RandomState(3).uniform(*bounds, size=(2, 6))
    xv = xv.astype(np.float32)
    out, out2 = _run(main, startup, {"x": xv}, [y, z])
    np.testing.assert_allclose(out, ref(xv.astype(np.float64)), rtol=2e-6,
                               atol=1e-6)
    np.testing.assert_array_equal(out, out2)


def test_log_and_sqrt_of_negatives_are_nan():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3], dtype="float64")
        outs = [L.log(x), L.sqrt(x), L.pow(x, factor=0.5)]
    xv = np.array([[-1.0, 0.0, 4.0]])
    lg, sq, pw = _run(main, startup, {"x": xv}, outs)
    assert np.isnan(lg[0, 0]) and lg[0, 1] == -np.inf
    assert np.isnan(sq[0, 0]) and sq[0, 1] == 0 and sq[0, 2] == 2
    assert np.isnan(pw[0, 0]) and pw[0, 2] == 2


ACTS = ["abs", "brelu", "elu", "exp", "gelu", "leaky_relu", "log", "pow",
        "relu", "relu6", "sigmoid", "softmax", "softplus", "softsign", "sqrt",
        "square", "tanh"]


@pytest.mark.parametrize("act", LAYERS)
def test_fc_act_applies_the_default_activation(act):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4], dtype="float64")
        pre = L.fc(x, 3, param_attr={"initializer": {"kind": "constant",
                                                     "value": 0.25}},
                   bias_attr={"initializer": {"kind": "constant",
                                              "value": 0.5}})
        y = L.fc(x, 3, act=act,
                 param_attr={"initializer": {"kind": "constant",
                                             "value": 0.25}},
                 bias_attr={"initializer": {"kind": "constant",
                                            "value": 0.5}})
    assert main.op_types()[-1] == act
    ref = next(c[2] for c in CASES if c[0] == act and not c[1])
    xv = np.random.RandomState(5).uniform(0.1, 2, size=(2, 4))
    h, out = _run(main, startup, {"x": xv}, [pre, y])
    np.testing.assert_allclose(h, xv.sum(1, keepdims=True) * 0.25 + 0.5 +
                               np.zeros((1, 3)), rtol=1e-12)
    np.testing.assert_allclose(out, ref(h), rtol=1e-12)


@pytest.mark.parametrize("act", ["leaky_relu", "elu", "relu6", "softplus"])
def test_conv2d_act(act):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [2, 5, 5])
        n = len(main.ops())
        y = L.conv2d(x, 3, 3, act=act)
    assert main.op_types()[n:] == ["conv2d", "elementwise_add", act]
    assert y.shape == (-1, 3, 3, 3)


@pytest.mark.parametrize("layer", ["fc", "conv2d", "elementwise_add"])
def test_unknown_act_names_layer_argument_and_known_ones(layer):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [2, 5, 5])
        n = len(main.ops())
        with pytest.raises(ValueError) as err:
            if layer == "fc":
                L.fc(x, 3, act="swish")
            elif layer == "conv2d":
                L.conv2d(x, 3, 3, act="swish")
            else:
                L.elementwise_add(x, x, act="swish")
    msg = str(err.value)
    assert (f"layer '{layer}': argument 'act': unknown activation 'swish'; "
            f"known: {', '.join(ACTS)}") in msg
    assert len(main.ops()) == n
    assert startup.op_types() == []


# Derivatives in terms of x, for one SGD step through each activation.
DERIVS = {
    "leaky_relu": lambda x: np.where(x > 0, 1.0, np.float32(0.02)),
    "elu": lambda x: np.where(x > 0, 1.0, np.exp(x)),
    "relu6": lambda x: ((x > 0) & (x < 6)).astype(np.float64),
    "brelu": lambda x: ((x > 0) & (x < 24)).astype(np.float64),
    "exp": np.exp,
    "log": lambda x: 1 / x,
    "sqrt": lambda x: 0.5 / np.sqrt(x),
    "square": lambda x: 2 * x,
    "abs": np.sign,
    "pow": lambda x: np.ones_like(x),
    "softplus": lambda x: 1 / (1 + np.exp(-x)),
    "softsign": lambda x: 1 / (1 + np.abs(x)) ** 2,
}


@pytest.mark.parametrize("act", LAYERS)
def test_sgd_step_through_the_activation(act):
    """minimize() emits the activation's grad op; one SGD step moves the
    fc weight by the gradient worked out in NumPy."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4], dtype="float64")
        h = L.fc(x, 3, param_attr={"name": "w", "initializer": {
                     "kind": "constant", "value": 0.25}},
                 bias_attr={"name": "b", "initializer": {
                     "kind": "constant", "value": 0.5}})
        loss = L.mean(getattr(L, act)(h))
        fluid.optimizer.SGD(0.1).minimize(loss)
    assert f"{act}_grad" in main.op_types()
    xv = np.random.RandomState(7).uniform(0.1, 2, size=(5, 4))
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    exe.run(main, feed={"x": xv}, fetch_list=[loss], scope=scope)
    hv = xv @ np.full((4, 3), 0.25) + 0.5
    dh = DERIVS[act](hv) / hv.size
    lr = float(np.float32(0.1))  # the optimizer's learning rate is float32
    np.testing.assert_allclose(scope.get("w"), 0.25 - lr * xv.T @ dh,
                               rtol=1e-12)
    np.testing.assert_allclose(scope.get("b"), 0.5 - lr * dh.sum(0),
                               rtol=1e-12)
