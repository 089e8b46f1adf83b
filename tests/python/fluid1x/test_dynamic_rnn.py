"""fluid.layers.DynamicRNN in Fluid 1.x's form: h_t = tanh(fc(x_t) +
fc(h_{t-1})) over sequences of different lengths against the recurrence
run per sequence in NumPy (outputs and the gradients of the weights, the
input and the initial state; float64, 1e-10), with the memory from
shape/value and from init (need_reorder=True); a static input; a GRU cell
written with layers against fluid.layers.dynamic_gru on the same weights;
and the errors of misuse."""
import numpy as np
import pytest

import fluid

L = fluid.layers
D, H, S = 3, 4, 2
LENGTHS = [2, 0, 4, 1, 4]  # an empty sequence, two of one length
OFFSETS = np.concatenate([[0], np.cumsum(LENGTHS)])


def _param(name, seed):
    return fluid.ParamAttr(
        name=name, initializer=fluid.initializer.UniformInitializer(
            -0.8, 0.8, seed=seed))


def _rnn_net(from_init, static):
    x = L.data("x", [D], dtype="float64", lod_level=1, stop_gradient=False)
    h0 = L.data("h0", [H], dtype="float64", stop_gradient=False)
    c = L.data("c", [S], dtype="float64", stop_gradient=False)
    r = L.data("r", [H], dtype="float64")
    drnn = L.DynamicRNN()
    with drnn.block():
        x_t = drnn.step_input(x)
        if from_init:
            prev = drnn.memory(init=h0, need_reorder=True)
        else:
            prev = drnn.memory(shape=[H], value=0.5, dtype="float64")
        a = L.elementwise_add(
            L.fc(x_t, H, bias_attr=False, param_attr=_param("wx", 3)),
            L.fc(prev, H, bias_attr=False, param_attr=_param("wh", 4)))
        if static:
            c_t = drnn.static_input(c)
            a = L.elementwise_add(
                a, L.fc(c_t, H, bias_attr=False, param_attr=_param("wc", 5)))
        h = L.tanh(a)
        drnn.update_memory(prev, h)
        drnn.output(h)
    out = drnn()
    loss = L.mean(L.elementwise_mul(out, r))
    fluid.optimizer.SGD(0.1).minimize(loss)
    return out, loss


def _numpy_rnn(x, h0, c, r, w):
    """Forward and backward of the recurrence, one sequence at a time."""
    k = 1.0 / r.size
    out = np.zeros((OFFSETS[-1], H))
    g = {n: np.zeros_like(v) for n, v in w.items()}
    g.update(x=np.zeros_like(x), h0=np.zeros_like(h0), c=np.zeros_like(c))
    for s, n in enumerate(LENGTHS):
        hs = [h0[s]]
        for t in range(n):
            row = OFFSETS[s] + t
            hs.append(np.tanh(x[row] @ w["wx"] + hs[-1] @ w["wh"]
                              + c[s] @ w["wc"]))
            out[row] = hs[-1]
        dh = np.zeros(H)
        for t in reversed(range(n)):
            row = OFFSETS[s] + t
            da = (dh + k * r[row]) * (1 - hs[t + 1] ** 2)
            g["wx"] += np.outer(x[row], da)
            g["wh"] += np.outer(hs[t], da)
            g["wc"] += np.outer(c[s], da)
            g["x"][row] = da @ w["wx"].T
            g["c"][s] += da @ w["wc"].T
            dh = da @ w["wh"].T
        g["h0"][s] = dh
    return out, np.sum(out * r) * k, g


@pytest.mark.parametrize("from_init,static", [(False, False), (True, False),
                                              (True, True)])
def test_dynamic_rnn_matches_numpy_per_sequence(from_init, static):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        out, loss = _rnn_net(from_init, static)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    names = ["wx", "wh"] + (["wc"] if static else [])
    w = {n: np.array(scope.find_var(n).get_tensor()) for n in names}
    if not static:
        w["wc"] = np.zeros((S, H))
    rs = np.random.RandomState(2)
    rows = sum(LENGTHS)
    x = rs.uniform(-1, 1, (rows, D))
    h0 = rs.uniform(-1, 1, (len(LENGTHS), H))
    c = rs.uniform(-1, 1, (len(LENGTHS), S))
    r = rs.uniform(-1, 1, (rows, H))
    feed = {"x": fluid.create_lod_tensor(x, [LENGTHS]), "h0": h0, "c": c,
            "r": r}
    grads = names + ["x"] + (["h0"] if from_init else []) + \
        (["c"] if static else [])
    got = exe.run(main, feed=feed, scope=scope, return_numpy=False,
                  fetch_list=[out, loss] + [n + "@GRAD" for n in grads])
    want_out, want_loss, want = _numpy_rnn(
        x, h0 if from_init else np.full_like(h0, 0.5), c, r, w)
    assert got[0].recursive_sequence_lengths() == [LENGTHS]
    np.testing.assert_allclose(np.asarray(got[0]), want_out, rtol=0,
                               atol=1e-10)
    np.testing.assert_allclose(np.asarray(got[1]), want_loss, rtol=0,
                               atol=1e-10)
    for k, name in enumerate(grads):
        np.testing.assert_allclose(np.asarray(got[2 + k]), want[name],
                                   rtol=0, atol=1e-10, err_msg=name)
        assert np.abs(want[name]).max() > 1e-3, name


def _gru_net(origin_mode):
    """A GRU cell of layers in a DynamicRNN on g1, dynamic_gru on g2 (both
    the projected gate input [rows, 3H], blocks {update, reset,
    candidate})."""
    g1 = L.data("g1", [3 * H], dtype="float64", lod_level=1,
                stop_gradient=False)
    g2 = L.data("g2", [3 * H], dtype="float64", lod_level=1,
                stop_gradient=False)
    r = L.data("r", [H], dtype="float64")
    drnn = L.DynamicRNN()
    with drnn.block():
        g_t = drnn.step_input(g1)
        h = drnn.memory(shape=[H], dtype="float64")
        ur = L.sigmoid(L.elementwise_add(
            L.slice(g_t, axes=[1], starts=[0], ends=[2 * H]),
            L.fc(h, 2 * H, bias_attr=False, param_attr=_param("wur", 6))))
        u = L.slice(ur, axes=[1], starts=[0], ends=[H])
        rg = L.slice(ur, axes=[1], starts=[H], ends=[2 * H])
        c = L.tanh(L.elementwise_add(
            L.slice(g_t, axes=[1], starts=[2 * H], ends=[3 * H]),
            L.fc(rg * h, H, bias_attr=False, param_attr=_param("wc", 7))))
        if origin_mode:
            new = u * h + (1.0 - u) * c
        else:
            new = (1.0 - u) * h + u * c
        drnn.update_memory(h, new)
        drnn.output(new)
    out1 = drnn()
    out2 = L.dynamic_gru(g2, H, param_attr=fluid.ParamAttr(name="gru_w"),
                         bias_attr=False, origin_mode=origin_mode)
    loss = L.elementwise_add(L.mean(L.elementwise_mul(out1, r)),
                             L.mean(L.elementwise_mul(out2, r)))
    fluid.optimizer.SGD(0.1).minimize(loss)
    return out1, out2


@pytest.mark.parametrize("origin_mode", [False, True])
def test_gru_cell_in_dynamic_rnn_equals_dynamic_gru(origin_mode):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        out1, out2 = _gru_net(origin_mode)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    wur = np.array(scope.find_var("wur").get_tensor())
    wc = np.array(scope.find_var("wc").get_tensor())
    # dynamic_gru's weight in memory: W_ur [H, 2H], then W_c [H, H].
    scope.find_var("gru_w").get_tensor().set(
        np.concatenate([wur.ravel(), wc.ravel()]).reshape(H, 3 * H),
        fluid.CPUPlace())
    lengths = [2, 4, 1, 4, 3]  # dynamic_gru takes no empty sequence
    rs = np.random.RandomState(5)
    g = rs.uniform(-1, 1, (sum(lengths), 3 * H))
    r = rs.uniform(-1, 1, (sum(lengths), H))
    feed = {"g1": fluid.create_lod_tensor(g, [lengths]),
            "g2": fluid.create_lod_tensor(g, [lengths]), "r": r}
    got = exe.run(main, feed=feed, scope=scope,
                  fetch_list=[out1, out2, "g1@GRAD", "g2@GRAD", "wur@GRAD",
                              "wc@GRAD", "gru_w@GRAD"])
    np.testing.assert_allclose(got[0], got[1], rtol=0, atol=1e-10)
    np.testing.assert_allclose(got[2], got[3], rtol=0, atol=1e-10)
    flat = np.concatenate([got[4].ravel(), got[5].ravel()])
    np.testing.assert_allclose(flat, got[6].ravel(), rtol=0, atol=1e-10)
    assert np.abs(got[0]).max() > 1e-2 and np.abs(flat).max() > 1e-3


def test_misuse_errors_say_what_to_do():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [D], dtype="float64", lod_level=1)
        drnn = L.DynamicRNN()
        with pytest.raises(ValueError, match=r"inside `with drnn.block\(\)"):
            drnn.step_input(x)
        with pytest.raises(ValueError, match="call drnn.step_input"):
            with drnn.block():
                drnn.memory(shape=[H])
        drnn = L.DynamicRNN()
        with pytest.raises(ValueError, match="call it first in the block"):
            with drnn.block():
                L.scale(x, 2.0)
                drnn.step_input(x)
        drnn = L.DynamicRNN()
        with pytest.raises(ValueError, match="never updated"):
            with drnn.block():
                x_t = drnn.step_input(x)
                drnn.memory(shape=[H], dtype="float64")
                drnn.output(x_t)
        drnn = L.DynamicRNN()
        with pytest.raises(ValueError, match=r"after the `with drnn.block"):
            drnn()
        with pytest.raises(TypeError, match=r"step_input\(level="):
            with drnn.block():
                drnn.step_input(x, level="0")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [D], dtype="float64", lod_level=1)
        drnn = L.DynamicRNN()
        with drnn.block():
            x_t = drnn.step_input(x)
            with pytest.raises(ValueError, match="give init, or shape"):
                drnn.memory()
            with pytest.raises(ValueError, match=r"memory\(shape=\[0\]\)"):
                drnn.memory(shape=[0])
            with pytest.raises(ValueError, match="not a memory"):
                drnn.update_memory(x_t, x_t)
            drnn.output(x_t)
        with pytest.raises(ValueError, match="inside `with drnn.block"):
            drnn.output(x_t)
        with pytest.raises(ValueError, match="has one block"):
            with drnn.block():
                pass
    with pytest.raises(TypeError, match=r"DynamicRNN\(name=3\)"):
        L.DynamicRNN(name=3)
