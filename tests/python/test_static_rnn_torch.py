"""fluid.layers.StaticRNN against a PyTorch 1.13 loop of torch.nn.RNNCell
(tanh) with the same weights, in float32: the outputs over time and the
gradients of the weights, the bias and the input."""
import numpy as np
import pytest

import fluid

torch = pytest.importorskip("torch")

L = fluid.layers
T, B, D, H = 5, 3, 4, 6


def test_static_rnn_matches_torch_rnn_cell():
    rs = np.random.RandomState(11)
    wx = rs.uniform(-0.5, 0.5, (D, H)).astype("float32")
    wh = rs.uniform(-0.5, 0.5, (H, H)).astype("float32")
    b = rs.uniform(-0.5, 0.5, (H,)).astype("float32")
    x = rs.uniform(-1, 1, (T, B, D)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        xv = L.data("x", [T, B, D], append_batch_size=False,
                    stop_gradient=False)
        rnn = L.StaticRNN()
        with rnn.step():
            x_t = rnn.step_input(xv)
            h = rnn.memory(shape=[-1, H], batch_ref=x_t)
            new = L.tanh(L.fc(x_t, H, param_attr=fluid.ParamAttr(name="wx"),
                              bias_attr=fluid.ParamAttr(name="b")) +
                         L.fc(h, H, param_attr=fluid.ParamAttr(name="wh"),
                              bias_attr=False))
            rnn.update_memory(h, new)
            rnn.step_output(new)
        out = rnn()
        loss = L.reduce_sum(out * out)
        fluid.optimizer.SGD(0.1).minimize(loss)  # gradients fetched
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    for name, value in (("wx", wx), ("wh", wh), ("b", b)):
        scope.set(name, value)
    got = exe.run(main, feed={"x": x}, scope=scope,
                  fetch_list=[out, "wx@GRAD", "wh@GRAD", "b@GRAD", "x@GRAD"])

    cell = torch.nn.RNNCell(D, H, bias=True, nonlinearity="tanh")
    with torch.no_grad():
        cell.weight_ih.copy_(torch.from_numpy(wx.T))
        cell.weight_hh.copy_(torch.from_numpy(wh.T))
        cell.bias_ih.copy_(torch.from_numpy(b))
        cell.bias_hh.zero_()
    cell.bias_hh.requires_grad_(False)
    xt = torch.from_numpy(x).requires_grad_(True)
    h = torch.zeros(B, H)
    outs = []
    for t in range(T):
        h = cell(xt[t], h)
        outs.append(h)
    ref = torch.stack(outs, 0)
    (ref * ref).sum().backward()
    want = [ref.detach().numpy(), cell.weight_ih.grad.numpy().T,
            cell.weight_hh.grad.numpy().T, cell.bias_ih.grad.numpy(),
            xt.grad.numpy()]
    for g, w, what in zip(got, want, ["out", "wx", "wh", "b", "x"]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=what)
