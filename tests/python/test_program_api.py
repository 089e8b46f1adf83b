"""The Program, scope and executor API of Fluid 1.x scripts:
global_block, list_vars, all_parameters, scope_guard,
find_var(...).get_tensor(), Executor.run's extra arguments, close, and
fluid.core."""
import numpy as np
import pytest

import fluid

L = fluid.layers


def small_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3])
        y = L.fc(x, 2)
        loss = L.mean(y)
    return main, startup, x, y, loss


def test_global_block_list_vars_and_all_parameters():
    main, _, x, y, _ = small_program()
    block = main.global_block()
    assert block.idx == 0 and main.block(0).program is main
    names = [v.name for v in main.list_vars()]
    assert x.name in names and y.name in names
    assert set(block.vars) == set(names)
    assert block.var(x.name).shape == (-1, 3)
    assert block.has_var(y.name) and not block.has_var("nothing")
    params = main.all_parameters()
    assert len(params) == 2  # the fc weight and bias
    assert sorted(p.shape for p in params) == [(2,), (3, 2)]
    assert all(p.persistable for p in params)
    assert [op["type"] for op in block.ops] == main.op_types()
    with pytest.raises(IndexError, match="one block"):
        main.block(1)


def test_scope_guard_and_find_var_get_tensor():
    main, startup, x, y, _ = small_program()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        assert fluid.global_scope() is scope
        exe.run(startup)
        w = main.all_parameters()[0].name
        tensor = fluid.global_scope().find_var(w).get_tensor()
        value = np.array(tensor)
        assert list(value.shape) == tensor.shape()
        tensor.set(np.ones_like(value))
        assert (np.array(scope.find_var(w).get_tensor()) == 1).all()
    assert fluid.global_scope() is not scope
    assert fluid.global_scope().find_var(w) is None
    with pytest.raises(TypeError, match="fluid.Scope"):
        with fluid.scope_guard(object()):
            pass


def test_run_takes_fluids_arguments_and_close_ends_the_executor():
    main, startup, x, y, loss = small_program()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((4, 3), np.float32)}
    (a,) = exe.run(main, feed=feed, fetch_list=[y], scope=scope,
                   return_numpy=True, use_program_cache=True,
                   feed_var_name="feed", fetch_var_name="fetch")
    (b,) = exe.run(main, feed=feed, fetch_list=[y], scope=scope,
                   return_numpy=False)
    np.testing.assert_array_equal(a, np.array(b))
    exe.close()
    with pytest.raises(RuntimeError, match="closed"):
        exe.run(main, feed=feed, fetch_list=[y], scope=scope)


def test_fluid_core_names():
    assert fluid.core.is_compiled_with_cuda() == fluid.is_compiled_with_cuda()
    assert isinstance(fluid.core.Scope(), fluid.Scope)
    assert fluid.core.CPUPlace is fluid.CPUPlace
