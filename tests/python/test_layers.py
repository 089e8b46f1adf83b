"""Every layer builds the ops the C++ builder builds.

The mlp and the LeNet written with fluid.layers must match, op for op, the
built-in models of `trainer --model NAME` (src/builder/models.cc): the op
types of the main program are compared with the text `trainer
--print-program` prints, and the var shapes, parameters and startup program
with the job `trainer --save` writes. Then each layer on its own appends the
expected op and output shape (-1: the batch dimension).
"""
import re
import subprocess

import numpy as np
import pytest

import fluid

L = fluid.layers

# Scopes outlive the executors bound to them: freeing a Scope first crashes
# (see test_executor.py::test_scope_freed_before_executor_does_not_crash).
_SCOPES = []


def new_scope():
    s = fluid.Scope()
    _SCOPES.append(s)
    return s


# One line per op: "type(In=[..], ...) -> (Out=[..], ...)".
OP_LINE = re.compile(r"^([A-Za-z0-9_]+)\((.*)\) -> \((.*)\)$")


def printed_op_types(trainer, model):
    text = subprocess.run([trainer, "--model", model, "--print-program"],
                          check=True, capture_output=True, text=True,
                          timeout=60).stdout
    types = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        m = OP_LINE.match(line)
        assert m, f"unexpected line in --print-program output: {line!r}"
        types.append(m.group(1))
    assert types, "trainer --print-program printed no ops"
    return types


def saved_job(trainer, model, tmp_path):
    path = tmp_path / f"{model}.pb"
    subprocess.run([trainer, "--model", model, "--save", str(path)],
                   check=True, capture_output=True, text=True, timeout=60)
    return fluid.io.load_job(str(path))


def build(model, seed=1):
    """The model as models.cc builds it, with trainer's default optimizer
    (Momentum 0.9, lr 0.1 for the mlp, 0.05 for LeNet)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.program_guard(main, startup):
        image = L.data("image", [1, 28, 28], dtype="float32")
        label = L.data("label", [1], dtype="int64")
        if model == "mlp":
            h = L.fc(image, 512, act="relu")
            h = L.fc(h, 256, act="relu")
            logits = L.fc(h, 10)
        else:
            h = L.conv2d(image, 20, 5, act="relu")
            h = L.pool2d(h, 2, "max", 2)
            h = L.conv2d(h, 50, 5, act="relu")
            h = L.pool2d(h, 2, "max", 2)
            h = L.fc(h, 500, act="relu")
            logits = L.fc(h, 10)
        loss = L.mean(L.softmax_with_cross_entropy(logits, label))
        acc = L.accuracy(logits, label)
        lr = 0.1 if model == "mlp" else 0.05
        fluid.optimizer.Momentum(lr, 0.9).minimize(loss)
    return main, startup, loss, acc


def output_shapes(program):
    """Per op: its type and the shapes of its outputs, slot by slot (names
    differ where the trainer renames loss/accuracy; shapes must not)."""
    out = []
    for op in program.ops():
        slots = []
        for slot in sorted(op["outputs"]):
            shapes = []
            for name in op["outputs"][slot]:
                if program.desc.has_var(name):
                    shapes.append(tuple(program.desc.var(name)["shape"]))
                else:
                    shapes.append(None)  # e.g. @EMPTY@
            slots.append((slot, tuple(shapes)))
        out.append((op["type"], tuple(slots)))
    return out


def params(program):
    return {v["name"]: (tuple(v["shape"]), v["dtype"])
            for v in program.desc.vars() if v["persistable"]}


@pytest.mark.parametrize("model", ["mlp", "lenet"])
def test_model_ops_match_trainer_print_program(model, trainer_bin):
    main, _, _, _ = build(model)
    expected = printed_op_types(trainer_bin, model)
    assert main.op_types() == expected


@pytest.mark.parametrize("model", ["mlp", "lenet"])
def test_model_shapes_match_trainer_job(model, trainer_bin, tmp_path):
    main, startup, loss, acc = build(model)
    job = saved_job(trainer_bin, model, tmp_path)
    assert main.op_types() == job["main"].op_types()
    assert output_shapes(main) == output_shapes(job["main"])
    # Parameters and optimizer state: same names, shapes and dtypes.
    assert params(main) == params(job["main"])
    assert startup.op_types() == job["startup"].op_types()
    assert params(startup) == params(job["startup"])
    assert loss.shape == job["main"].var(job["loss"]).shape == (1,)
    assert acc.shape == job["main"].var(job["metrics"][0]).shape == (1,)
    assert job["feeds"] == ["image", "label"]
    assert main.var("image").shape == (-1, 1, 28, 28)
    assert main.var("label").shape == (-1, 1)
    assert main.var("label").dtype == "int64"


def test_mlp_initial_params_match_trainer(trainer_bin, tmp_path):
    """Same seed (trainer's default --seed 1): the same initial values."""
    main, startup, _, _ = build("mlp", seed=1)
    job = saved_job(trainer_bin, "mlp", tmp_path)
    exe = fluid.Executor(fluid.CPUPlace())
    mine, theirs = new_scope(), new_scope()
    exe.run(startup, scope=mine)
    exe.run(job["startup"], scope=theirs)
    names = sorted(params(main))
    assert names
    for n in names:
        np.testing.assert_array_equal(mine.get(n), theirs.get(n), err_msg=n)


def test_lenet_shapes():
    main, _, _, _ = build("lenet")
    shapes = [(op["type"], tuple(main.var(op["outputs"][k][0]).shape))
              for op in main.ops()[:8]
              for k in op["outputs"] if k in ("Out", "Output")]
    assert shapes == [
        ("conv2d", (-1, 20, 24, 24)), ("elementwise_add", (-1, 20, 24, 24)),
        ("relu", (-1, 20, 24, 24)), ("pool2d", (-1, 20, 12, 12)),
        ("conv2d", (-1, 50, 8, 8)), ("elementwise_add", (-1, 50, 8, 8)),
        ("relu", (-1, 50, 8, 8)), ("pool2d", (-1, 50, 4, 4)),
    ]
    assert main.var("fc_0.w_0").shape == (800, 500)
    assert main.var("conv2d_0.w_0").shape == (20, 1, 5, 5)
    assert main.var("conv2d_1.w_0").shape == (50, 20, 5, 5)


# ---- each layer on its own ----

def fresh():
    return fluid.Program(), fluid.Program()


def appended(main, before):
    return main.op_types()[before:]


@pytest.mark.parametrize("layer", ["relu", "sigmoid", "tanh"])
def test_activation(layer):
    main, startup = fresh()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 8, 8])
        n = len(main.ops())
        y = getattr(L, layer)(x)
    assert appended(main, n) == [layer]
    assert y.shape == (-1, 3, 8, 8)
    assert y.dtype == "float32"
    assert main.ops()[-1]["inputs"] == {"X": ["x"]}
    assert main.ops()[-1]["outputs"]["Out"] == [y.name]
    assert startup.op_types() == []


def test_softmax():
    main, startup = fresh()
    with fluid.program_guard(main, startup):
        x = L.data("x", [10])
        n = len(main.ops())
        y = L.softmax(x)
    assert appended(main, n) == ["softmax"]
    assert y.shape == (-1, 10)


def test_cross_entropy():
    main, startup = fresh()
    with fluid.program_guard(main, startup):
        x = L.data("x", [10])
        label = L.data("label", [1], dtype="int64")
        p = L.softmax(x)
        n = len(main.ops())
        ce = L.cross_entropy(p, label)
    assert appended(main, n) == ["cross_entropy"]
    assert ce.shape == (-1, 1)


def test_softmax_with_cross_entropy_mean_accuracy():
    main, startup = fresh()
    with fluid.program_guard(main, startup):
        x = L.data("x", [10])
        label = L.data("label", [1], dtype="int64")
        ce = L.softmax_with_cross_entropy(x, label)
        loss = L.mean(ce)
        acc = L.accuracy(x, label)
    assert main.op_types() == ["softmax_with_cross_entropy", "mean",
                               "accuracy"]
    assert ce.shape == (-1, 1)
    assert loss.shape == (1,)
    assert acc.shape == (1,)


@pytest.mark.parametrize("shape,expected", [
    ([-1, 192], (-1, 192)), ([0, 3, 64], (-1, 3, 64)),
    ([-1, 3, 8, 8], (-1, 3, 8, 8))])
def test_reshape(shape, expected):
    main, startup = fresh()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 8, 8])
        n = len(main.ops())
        y = L.reshape(x, shape)
    assert appended(main, n) == ["reshape"]
    assert y.shape == expected


def test_elementwise_add():
    main, startup = fresh()
    with fluid.program_guard(main, startup):
        x = L.data("x", [10])
        y = L.data("y", [10])
        n = len(main.ops())
        z = L.elementwise_add(x, y)
        assert appended(main, n) == ["elementwise_add"]
        assert z.shape == (-1, 10)
        n = len(main.ops())
        r = L.elementwise_add(x, y, act="relu")
        assert appended(main, n) == ["elementwise_add", "relu"]
        assert r.shape == (-1, 10)


@pytest.mark.parametrize("op", ["sub", "mul", "div", "max", "min", "pow"])
def test_other_elementwise_layers(op):
    layer = getattr(L, "elementwise_" + op)
    main, startup = fresh()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 4])
        y = L.data("y", [3], append_batch_size=False)
        n = len(main.ops())
        z = layer(x, y, axis=1, act="tanh", name="out")
        assert appended(main, n) == ["elementwise_" + op, "tanh"]
        assert z.shape == (-1, 3, 4)
        assert main.ops()[n]["outputs"]["Out"][0].startswith("out")
        # A Y that does not line up with X is caught while building.
        with pytest.raises(ValueError, match=r"does not match"):
            layer(x, y)


def test_scale_and_fill_constant():
    main, startup = fresh()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4])
        n = len(main.ops())
        s = L.scale(x, scale=2.0, bias=1.0, bias_after_scale=False)
        c = L.fill_constant([2, 3], "float64", 1.5)
        assert appended(main, n) == ["scale", "fill_constant"]
        assert s.shape == (-1, 4)
        assert c.shape == (2, 3) and c.dtype == "float64"


def test_pool2d_avg():
    main, startup = fresh()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 8, 8])
        n = len(main.ops())
        avg = L.pool2d(x, 2, "avg", 2)
        assert appended(main, n) == ["pool2d"]
        assert avg.shape == (-1, 3, 4, 4)
        g = L.pool2d(x, 2, "avg", global_pooling=True)
        assert g.shape == (-1, 3, 1, 1)
        mx = L.pool2d(x, 2, "max", 2)
    # The op's attributes are not exposed to Python: check the pool type
    # by running it.
    xv = np.random.RandomState(0).rand(2, 3, 8, 8).astype(np.float32)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = new_scope()
    exe.run(startup, scope=scope)
    a, gv, m = exe.run(main, feed={"x": xv}, fetch_list=[avg, g, mx],
                       scope=scope)
    blocks = xv.reshape(2, 3, 4, 2, 4, 2)
    np.testing.assert_allclose(a, blocks.mean(axis=(3, 5)), rtol=1e-6)
    np.testing.assert_allclose(m, blocks.max(axis=(3, 5)), rtol=0)
    np.testing.assert_allclose(gv, xv.mean(axis=(2, 3), keepdims=True),
                               rtol=1e-5)


def test_fc_and_conv2d():
    main, startup = fresh()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 8, 8])
        n = len(main.ops())
        y = L.fc(x, 5, act="tanh")
        assert appended(main, n) == ["mul", "elementwise_add", "tanh"]
        assert y.shape == (-1, 5)
        assert main.var("fc_0.w_0").shape == (192, 5)
        assert main.var("fc_0.b_0").shape == (5,)
        n = len(main.ops())
        c = L.conv2d(x, 4, 3, padding=1)
        assert appended(main, n) == ["conv2d", "elementwise_add"]
        assert c.shape == (-1, 4, 8, 8)
        c2 = L.conv2d(x, 4, 3, stride=2)
        assert c2.shape == (-1, 4, 3, 3)
    # one initializer per parameter
    assert len(startup.op_types()) == 6
    assert all(v.persistable for v in (main.var("fc_0.w_0"),
                                        main.var("conv2d_0.w_0")))


def test_data_without_batch_dim_and_dtypes():
    main, startup = fresh()
    with fluid.program_guard(main, startup):
        a = L.data("a", [4, 2], dtype="float64", append_batch_size=False)
        b = L.data("b", [1], dtype="int64")
    assert a.shape == (4, 2) and a.dtype == "float64"
    assert b.shape == (-1, 1) and b.dtype == "int64"
    assert main.op_types() == []


def test_program_guard_isolates_programs():
    m1, s1 = fresh()
    m2, s2 = fresh()
    with fluid.program_guard(m1, s1):
        x = L.data("x", [4])
        L.fc(x, 3)
    with fluid.program_guard(m2, s2):
        x = L.data("x", [4])
        L.relu(x)
    assert m1.op_types() == ["mul", "elementwise_add"]
    assert m2.op_types() == ["relu"]
    assert len(s1.op_types()) == 2 and s2.op_types() == []
    # a fresh pair names its parameters from 0 again
    assert m1.desc.has_var("fc_0.w_0")


def test_unknown_input_raises():
    main, startup = fresh()
    with fluid.program_guard(main, startup):
        with pytest.raises((KeyError, ValueError), match="nope"):
            L.relu("nope")


def test_param_attr_name_and_initializer():
    main, startup = fresh()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4])
        y = L.fc(x, 3, param_attr=L.ParamAttr(
                     name="my_w", initializer={"kind": "constant",
                                               "value": 0.5}),
                 bias_attr={"name": "my_b",
                            "initializer": {"kind": "constant",
                                            "value": -1.0}})
    assert main.var("my_w").shape == (4, 3)
    assert main.var("my_b").shape == (3,)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.global_scope()  # lives as long as the process
    exe.run(startup, scope=scope)
    np.testing.assert_array_equal(scope.get("my_w"), np.full((4, 3), 0.5))
    (out,) = exe.run(main, feed={"x": np.ones((2, 4), np.float32)},
                     fetch_list=[y], scope=scope)
    np.testing.assert_allclose(out, np.full((2, 3), 1.0))


@pytest.mark.parametrize("layer", ["fc", "conv2d"])
def test_no_bias(layer):
    main, startup = fresh()
    with fluid.program_guard(main, startup):
        x = L.data("x", [1, 8, 8])
        if layer == "fc":
            L.fc(x, 5, bias_attr=False)
            assert main.op_types() == ["mul"]
        else:
            L.conv2d(x, 4, 3, bias_attr=False)
            assert main.op_types() == ["conv2d"]
    assert len(startup.op_types()) == 1
