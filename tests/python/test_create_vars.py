"""fluid.layers.create_parameter and create_global_var."""
import numpy as np
import pytest

import fluid

L = fluid.layers
_SCOPES = []  # scopes outlive the executors that used them


def run(main, startup, feed, fetch):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    outs = exe.run(main, feed=feed, fetch_list=fetch, scope=scope)
    return exe, scope, outs


def test_create_parameter_is_a_trainable_parameter_with_its_initializer():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3])
        w = L.create_parameter([3], "float32", name="my_w",
                               default_initializer={"kind": "constant",
                                                    "value": 0.5})
        b = L.create_parameter([3], "float32", is_bias=True)
        loss = L.mean(L.elementwise_add(L.elementwise_mul(x, w), b))
        fluid.optimizer.SGD(0.1).minimize(loss)
    assert w.name == "my_w" and w.shape == (3,)
    assert b.name.startswith("create_parameter_") and b.name.endswith(".b_0")
    assert {p.name for p in main.all_parameters()} >= {"my_w", b.name}
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    assert np.array_equal(scope.get("my_w"), np.full(3, 0.5, np.float32))
    assert np.array_equal(scope.get(b.name), np.zeros(3, np.float32))
    exe.run(main, feed={"x": np.ones((4, 3), np.float32)}, fetch_list=[loss],
            scope=scope)
    # trained: d(loss)/d(b) = 1/3 per element
    np.testing.assert_allclose(scope.get(b.name), np.full(3, -0.1 / 3),
                               rtol=1e-6)
    assert fluid.io.is_parameter(b)


def test_create_parameter_takes_an_initializer_object_as_fluid_does():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        w = L.create_parameter(
            [2, 3], "float32", name="obj_w",
            default_initializer=fluid.initializer.Constant(1.5))
        with pytest.raises(TypeError, match="fluid.initializer object"):
            L.create_parameter([2], "float32", default_initializer=1.5)
    assert w.name == "obj_w"
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    assert np.array_equal(scope.get("obj_w"), np.full((2, 3), 1.5, np.float32))


def test_create_parameter_attr_wins_and_errors_name_the_argument():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        w = L.create_parameter(
            [2, 2], "float32", name="ignored",
            attr=fluid.ParamAttr(name="from_attr",
                                 initializer={"kind": "constant",
                                              "value": 2.0}),
            default_initializer={"kind": "constant", "value": 9.0})
        assert w.name == "from_attr"
        with pytest.raises(ValueError, match="create_parameter.*shape"):
            L.create_parameter([2, 0], "float32")
        with pytest.raises(ValueError, match="create_parameter.*dtype"):
            L.create_parameter([2], "int8")
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    assert np.array_equal(scope.get("from_attr"),
                          np.full((2, 2), 2.0, np.float32))


def test_create_global_var_persistable_and_not():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [2])
        step = L.create_global_var([1], 3.0, "float32", persistable=True,
                                   name="step")
        k = L.create_global_var([2], 0.5, "float32")
        y = L.elementwise_mul(x, k)
    assert step.persistable and not k.persistable
    assert not fluid.io.is_parameter(step)
    _, scope, (out, s) = run(main, startup,
                             {"x": np.ones((1, 2), np.float32)}, [y, step])
    assert np.array_equal(out, np.full((1, 2), 0.5, np.float32))
    assert np.array_equal(s, np.array([3.0], np.float32))
    assert any("step" in op["outputs"].get("Out", []) for op in startup.ops())
    assert not any("step" in op["outputs"].get("Out", []) for op in main.ops())
