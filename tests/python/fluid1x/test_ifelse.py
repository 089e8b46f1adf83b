"""fluid.layers.IfElse (Fluid 1.x): a batch whose rows take both blocks
against numpy and against both branches computed on every row and picked
by a mask (loss and gradients to 1e-10 in float64); all rows on one side;
the errors."""
import numpy as np
import pytest

import fluid

L = fluid.layers
N = 6
X = np.random.RandomState(3).uniform(-1, 1, (N, 3))
MASK = np.array([[True], [False], [False], [True], [True], [False]])


def _fc(h, name):
    return L.fc(h, size=3, bias_attr=False,
                param_attr=fluid.ParamAttr(
                    name=name, initializer=fluid.initializer.UniformInitializer(
                        -1.0, 1.0, seed=21 if name == "wt" else 23)))


def _net(mode):
    x = L.data("x", [3], dtype="float64", stop_gradient=False)
    if mode == "plain":
        m = L.data("m", [3], dtype="float64")
        y = (L.elementwise_mul(L.tanh(_fc(x, "wt")), m)
             + L.elementwise_mul(L.scale(_fc(x, "wf"), 2.0), 1.0 - m))
        return y, L.mean(L.elementwise_mul(y, y))
    cond = L.data("cond", [1], dtype="bool")
    ie = L.IfElse(cond)
    with ie.true_block():
        ie.output(L.tanh(_fc(ie.input(x), "wt")))
    with ie.false_block():
        ie.output(L.scale(_fc(ie.input(x), "wf"), 2.0))
    y, = ie()
    return y, L.mean(L.elementwise_mul(y, y))


def _run(mode, mask=MASK):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        y, loss = _net(mode)
        fluid.optimizer.SGD(0.1).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    wt = np.array(scope.find_var("wt").get_tensor())
    wf = np.array(scope.find_var("wf").get_tensor())
    feed = {"x": X}
    if mode == "plain":
        feed["m"] = np.repeat(mask.astype("float64"), 3, axis=1)
    else:
        feed["cond"] = mask
    got = exe.run(main, feed=feed, scope=scope,
                  fetch_list=[y, loss, "wt@GRAD", "wf@GRAD", "x@GRAD"])
    return main, (wt, wf), got


@pytest.mark.parametrize("mask", [MASK, np.ones((N, 1), bool),
                                  np.zeros((N, 1), bool)],
                         ids=["mixed", "all_true", "all_false"])
def test_ifelse_matches_numpy_and_plain(mask):
    main, (wt, wf), got = _run("ifelse", mask)
    want_y = np.where(mask, np.tanh(X @ wt), 2.0 * (X @ wf))
    np.testing.assert_allclose(got[0], want_y, rtol=0, atol=1e-10)
    _, _, want = _run("plain", mask)
    for g, w, what in zip(got, want, ["y", "loss", "wt", "wf", "x"]):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-10, err_msg=what)
    # Forward: one split, two blocks, one merge; each of split and merge is
    # the other's gradient.
    types = main.op_types()
    assert types[:4] == ["split_lod_tensor", "conditional_block",
                         "conditional_block", "merge_lod_tensor"]
    assert types.count("split_lod_tensor") == 2
    assert types.count("merge_lod_tensor") == 2
    assert types.count("conditional_block_grad") == 2


def test_ifelse_errors():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = L.data("x", [3], dtype="float64")
        cond = L.data("cond", [1], dtype="bool")
        with pytest.raises(TypeError, match="must be bool"):
            L.IfElse(x)
        with pytest.raises(TypeError, match="expected a bool Variable"):
            L.IfElse(True)
        ie = L.IfElse(cond)
        with pytest.raises(ValueError, match="inside ie.true_block"):
            ie.input(x)
        with pytest.raises(ValueError, match="false block is not built"):
            with ie.true_block():
                ie.output(L.scale(ie.input(x), 2.0))
            ie()
        with pytest.raises(ValueError, match="built already"):
            with ie.true_block():
                pass
        with ie.false_block():
            xf = ie.input(x)
            ie.output(xf, L.scale(xf, 3.0))
        with pytest.raises(ValueError, match="gives 1 outputs and the false "
                           "block 2"):
            ie()
        ie2 = L.IfElse(cond)
        with pytest.raises(ValueError, match="reads no ie.input"):
            with ie2.true_block():
                ie2.output(L.scale(x, 2.0))
