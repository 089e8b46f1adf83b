"""fluid.layers.While in Fluid 1.x's form: a loop of T steps h = tanh(fc(h))
with one shared weight against the same layers unrolled (the loss, the
weight's gradient and the input's gradient equal to 1e-10 in float64), a
loop filling a tensor array, inference mode, clone(for_test=True), the
errors of a malformed loop, and the gradients of nested loops and of a
cond inside a loop against the same layers unrolled."""
import numpy as np
import pytest

import fluid

L = fluid.layers
STEPS = 5


def _fc(h, name="w", seed=7):
    return L.fc(h, size=3, act="tanh", bias_attr=False,
                param_attr=fluid.ParamAttr(
                    name=name, initializer=fluid.initializer.
                    UniformInitializer(-1.0, 1.0, seed=seed)))


def _net(loop):
    x = L.data("x", [3], dtype="float64", stop_gradient=False)
    if not loop:
        h = x
        for _ in range(STEPS):
            h = _fc(h)
        return L.mean(h)
    h = L.assign(x)
    i = L.fill_constant([1], "int64", 0)
    n = L.fill_constant([1], "int64", STEPS)
    cond = L.less_than(i, n)
    w = L.While(cond)
    with w.block():
        L.assign(_fc(h), h)
        L.increment(i)
        L.less_than(i, n, cond=cond)
    return L.mean(h)


def _train(loop, fetch=("w@GRAD", "x@GRAD")):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        loss = _net(loop)
        fluid.optimizer.SGD(0.1).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    x = np.random.RandomState(5).uniform(-1, 1, (4, 3))
    return main, exe.run(main, feed={"x": x}, fetch_list=[loss] + list(fetch),
                         scope=scope)


def test_loop_matches_unrolled():
    main, got = _train(True)
    _, want = _train(False)
    for g, w, what in zip(got, want, ["loss", "w@GRAD", "x@GRAD"]):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-10, err_msg=what)
    # The loop is block 1; its gradient block 2; w@GRAD written once.
    assert main.num_blocks == 3
    writers = [op["type"] for op in main.ops() if "w@GRAD" in
               sum(op["outputs"].values(), [])]
    assert writers == ["while_grad"]


def test_inference_clone_runs_the_loop():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        loss = _net(True)
        test = main.clone(for_test=True)
        fluid.optimizer.SGD(0.1).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    x = np.random.RandomState(5).uniform(-1, 1, (4, 3))
    before, = exe.run(test, feed={"x": x}, fetch_list=[loss], scope=scope)
    _, want = _train(False, fetch=())
    np.testing.assert_allclose(before, want[0], rtol=0, atol=1e-10)


def test_loop_fills_an_array():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [2], dtype="float32", append_batch_size=False)
        i = L.fill_constant([1], "int64", 0)
        n = L.fill_constant([1], "int64", 3)
        arr = L.create_array("float32")
        cond = L.less_than(i, n)
        loop = L.While(cond)
        with loop.block():
            L.array_write(x * 2.0, i, array=arr)
            L.assign(x * 2.0, x)
            L.increment(i)
            L.less_than(i, n, cond=cond)
        last = L.array_read(arr, L.fill_constant([1], "int64", 2))
        length = L.array_length(arr)
    exe = fluid.Executor(fluid.CPUPlace())
    got, count = exe.run(main, feed={"x": np.ones(2, "float32")},
                         fetch_list=[last, length], scope=fluid.Scope())
    np.testing.assert_array_equal(got, [8.0, 8.0])
    assert count.tolist() == [3]


def test_condition_must_be_updated_and_bool():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        i = L.fill_constant([1], "int64", 0)
        n = L.fill_constant([1], "int64", 3)
        cond = L.less_than(i, n)
        with pytest.raises(TypeError, match="must be one bool"):
            L.While(i)
        loop = L.While(cond)
        with pytest.raises(ValueError, match="never writes its condition"):
            with loop.block():
                L.increment(i)


def test_while_loop_matches_unrolled():
    """Fluid 1.8's while_loop: the loop vars (a counter and a state) come
    back updated, and the gradient through it equals the unrolled one."""
    def run(loop):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.unique_name.guard(), fluid.program_guard(main, startup):
            x = L.data("x", [3], dtype="float64", stop_gradient=False)
            if loop:
                i = L.fill_constant([1], "int64", 0)
                n = L.fill_constant([1], "int64", STEPS)
                i, h = L.while_loop(
                    lambda i, h: L.less_than(i, n),
                    lambda i, h: [L.increment(i, in_place=False), _fc(h)],
                    [i, L.assign(x)])
            else:
                h = x
                for _ in range(STEPS):
                    h = _fc(h)
            loss = L.mean(h)
            fluid.optimizer.SGD(0.1).minimize(loss)
        scope = fluid.Scope()
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup, scope=scope)
        x = np.random.RandomState(6).uniform(-1, 1, (2, 3))
        fetch = [loss, "w@GRAD", "x@GRAD"] + ([i] if loop else [])
        return exe.run(main, feed={"x": x}, fetch_list=fetch, scope=scope)

    got, want = run(True), run(False)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-10)
    assert got[3].tolist() == [STEPS]
    with pytest.raises(ValueError, match="body returned 1 Variables for 2"):
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            i = L.fill_constant([1], "int64", 0)
            L.while_loop(lambda i, j: L.less_than(i, j),
                         lambda i, j: [i], [i, i])


def test_saved_inference_model_runs_the_loop(tmp_path):
    """save_inference_model keeps the loop's block; the loaded program, in
    a fresh scope, computes what clone(for_test=True) computes."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [3], dtype="float64")
        h = L.assign(x)
        i = L.fill_constant([1], "int64", 0)
        n = L.fill_constant([1], "int64", 3)
        cond = L.less_than(i, n)
        loop = L.While(cond)
        with loop.block():
            L.assign(_fc(h), h)
            L.increment(i)
            L.less_than(i, n, cond=cond)
        out = L.scale(h, 2.0)
        fluid.optimizer.SGD(0.1).minimize(L.mean(out))
    exe = fluid.Executor(fluid.CPUPlace())
    xv = np.random.RandomState(5).uniform(-1, 1, (4, 3))
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        exe.run(main, feed={"x": xv})
        want, = exe.run(main.clone(for_test=True), feed={"x": xv},
                        fetch_list=[out])
        fluid.io.save_inference_model(str(tmp_path), ["x"], [out], exe,
                                      main_program=main)
    with fluid.scope_guard(fluid.Scope()):
        prog, feeds, fetches = fluid.io.load_inference_model(str(tmp_path),
                                                             exe)
        got, = exe.run(prog, feed={"x": xv}, fetch_list=fetches)
    assert "while" in [op["type"] for op in prog.ops()]
    np.testing.assert_array_equal(got, want)


def _nested(acc_init, steps):
    """acc += 1 in a loop of `steps` inside a loop of `steps`."""
    acc = L.assign(acc_init)
    i = L.fill_constant([1], "int64", 0)
    n = L.fill_constant([1], "int64", steps)
    c1 = L.less_than(i, n)
    outer = L.While(c1)
    with outer.block():
        j = L.fill_constant([1], "int64", 0)
        c2 = L.less_than(j, n)
        inner = L.While(c2)
        with inner.block():
            L.assign(acc * 2.0, acc)
            L.increment(j)
            L.less_than(j, n, cond=c2)
        L.increment(i)
        L.less_than(i, n, cond=c1)
    return acc


def test_nested_loops_run():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [1], dtype="float32", append_batch_size=False,
                   stop_gradient=False)
        acc = _nested(x, 3)
    # The inner loop's block (1, built first) is a child of the outer
    # loop's (2).
    parents = [main.block(b).parent_idx for b in range(main.num_blocks)]
    assert parents == [-1, 2, 0]
    got, = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={"x": np.array([1.0], "float32")}, fetch_list=[acc],
        scope=fluid.Scope())
    assert got.tolist() == [2.0 ** 9]


OUTER, INNER = 3, 2


def _fc_u(h):
    return _fc(h, name="u", seed=8)


def _nested_net(loop):
    """OUTER times: a copy of the state through INNER steps of tanh(fc_w),
    then the state = tanh(fc_u(copy)); as nested While loops or unrolled."""
    x = L.data("x", [3], dtype="float64", stop_gradient=False)
    if not loop:
        h = x
        for _ in range(OUTER):
            for _ in range(INNER):
                h = _fc(h)
            h = _fc_u(h)
        return L.mean(h)
    h = L.assign(x)
    i = L.fill_constant([1], "int64", 0)
    n = L.fill_constant([1], "int64", OUTER)
    c1 = L.less_than(i, n)
    outer = L.While(c1)
    with outer.block():
        hl = L.assign(h)  # the outer step's own copy, carried inside
        j = L.fill_constant([1], "int64", 0)
        m = L.fill_constant([1], "int64", INNER)
        c2 = L.less_than(j, m)
        inner = L.While(c2)
        with inner.block():
            L.assign(_fc(hl), hl)
            L.increment(j)
            L.less_than(j, m, cond=c2)
        L.assign(_fc_u(hl), h)
        L.increment(i)
        L.less_than(i, n, cond=c1)
    return L.mean(h)


def _two_weight_step(net, seed):
    """(program, [loss, w@GRAD, u@GRAD, x@GRAD, the loss after one SGD
    step]) of the network net() builds, on a random x."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        loss = net()
        fluid.optimizer.SGD(0.1).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    x = np.random.RandomState(seed).uniform(-1, 1, (4, 3))
    out = exe.run(main, feed={"x": x}, scope=scope,
                  fetch_list=[loss, "w@GRAD", "u@GRAD", "x@GRAD"])
    out += exe.run(main, feed={"x": x}, scope=scope, fetch_list=[loss])
    return main, out


def _expect_equal_steps(got, want):
    for g, w, what in zip(got, want, ["loss", "w@GRAD", "u@GRAD", "x@GRAD",
                                      "loss after a step"]):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-10, err_msg=what)


def test_nested_loops_gradient_matches_unrolled():
    """The inner loop's gradient block runs inside the outer's: each outer
    step replays its inner steps in reverse. Loss and the gradients of
    both weights and of x equal the unrolled network's to 1e-10 (float64),
    and an SGD step updates the weights the same."""
    main, got = _two_weight_step(lambda: _nested_net(True), 6)
    _, want = _two_weight_step(lambda: _nested_net(False), 6)
    _expect_equal_steps(got, want)
    assert np.abs(got[1]).max() > 1e-3 and np.abs(got[2]).max() > 1e-3
    # Both loops' gradient blocks: the inner's a kid of the inner body.
    types = [op["type"] for op in main.ops()]
    assert types.count("while_grad") == 1
    parents = [main.block(b).parent_idx for b in range(main.num_blocks)]
    assert len(parents) == 5 and parents[4] == 1 and parents[3] == 2, parents


def test_cond_inside_a_loop_gradient_matches_unrolled():
    """fluid.layers.cond in a While body, branching on the step: tanh(fc_w)
    on the first step, tanh(fc_u) on the others; against the branches
    unrolled."""
    def net(loop):
        x = L.data("x", [3], dtype="float64", stop_gradient=False)
        if not loop:
            h = x
            for t in range(OUTER):
                h = _fc(h) if t == 0 else _fc_u(h)
            return L.mean(h)
        h = L.assign(x)
        i = L.fill_constant([1], "int64", 0)
        n = L.fill_constant([1], "int64", OUTER)
        one = L.fill_constant([1], "int64", 1)
        c1 = L.less_than(i, n)
        loop_op = L.While(c1)
        with loop_op.block():
            hl = L.assign(h)
            first = L.less_than(i, one)
            out = L.cond(first, lambda: _fc(hl), lambda: _fc_u(hl))
            L.assign(out, h)
            L.increment(i)
            L.less_than(i, n, cond=c1)
        return L.mean(h)

    _expect_equal_steps(_two_weight_step(lambda: net(True), 7)[1],
                        _two_weight_step(lambda: net(False), 7)[1])


def _shrinking(loop):
    """Each step drops the state's last row, h = tanh(fc(h[:-1])), and the
    loss reads every step's output (from an array in the loop), not the
    final state: its gradient seeds each step with zeros."""
    x = L.data("x", [3], dtype="float64", stop_gradient=False)
    if not loop:
        h, outs = x, []
        for _ in range(2):
            h = _fc(L.slice(h, axes=[0], starts=[0], ends=[-1]))
            outs.append(L.mean(h))
        return L.sums(outs)
    h = L.assign(x)
    arr = L.create_array("float64")
    i = L.fill_constant([1], "int64", 0)
    n = L.fill_constant([1], "int64", 2)
    cond = L.less_than(i, n)
    w = L.While(cond)
    with w.block():
        new = _fc(L.slice(h, axes=[0], starts=[0], ends=[-1]))
        L.array_write(new, i, array=arr)
        L.assign(new, h)
        L.increment(i)
        L.less_than(i, n, cond=cond)
    return L.sums([L.mean(L.array_read(arr, L.fill_constant([1], "int64", k)))
                   for k in range(2)])


def test_a_state_the_loop_shrinks_gets_zero_gradients_of_its_new_shape():
    got, want = [], []
    for loop, out in ((True, got), (False, want)):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.unique_name.guard(), fluid.program_guard(main, startup):
            loss = _shrinking(loop)
            fluid.optimizer.SGD(0.1).minimize(loss)
        scope = fluid.Scope()
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup, scope=scope)
        x = np.random.RandomState(5).uniform(-1, 1, (4, 3))
        out += exe.run(main, feed={"x": x},
                       fetch_list=[loss, "w@GRAD", "x@GRAD"], scope=scope)
    for g, w, what in zip(got, want, ["loss", "w@GRAD", "x@GRAD"]):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-10, err_msg=what)
