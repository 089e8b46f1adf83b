"""The loop Fluid 1.x's DynamicRNN builds from the LoD-rank layers
(lod_rank_table, lod_tensor_to_array, shrink_memory,
reorder_lod_tensor_by_rank, array_to_lod_tensor in a While) against
PyTorch's RNNCell (tanh, no bias) run over each sequence on its own: the
outputs, and the gradients of both weights, the input and the initial
state (float64)."""
import numpy as np
import torch

import fluid

L = fluid.layers
D, H = 3, 5
LENGTHS = [3, 1, 0, 3, 2, 4]


def _fluid_rnn(x, h0, r):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        xv = L.data("x", [D], dtype="float64", lod_level=1,
                    stop_gradient=False)
        hv = L.data("h0", [H], dtype="float64", stop_gradient=False)
        rv = L.data("r", [H], dtype="float64")
        table = L.lod_rank_table(xv)
        steps = L.lod_tensor_to_array(xv, table)
        n = L.max_sequence_len(table)
        outs = L.create_array("float64")
        i = L.fill_constant([1], "int64", 0)
        # The state of step t is slot t of an array, as DynamicRNN keeps it
        # (slot 0 written at an index of its own: the loop moves i).
        zero = L.fill_constant([1], "int64", 0)
        mems = L.array_write(L.reorder_lod_tensor_by_rank(hv, table), zero)
        cond = L.less_than(i, n)
        loop = L.While(cond)
        with loop.block():
            init = fluid.initializer.UniformInitializer(-0.7, 0.7, seed=9)
            prev = L.shrink_memory(L.array_read(mems, i), i, table)
            h = L.tanh(L.elementwise_add(
                L.fc(L.array_read(steps, i), H, bias_attr=False,
                     param_attr=fluid.ParamAttr(name="wx", initializer=init)),
                L.fc(prev, H, bias_attr=False,
                     param_attr=fluid.ParamAttr(name="wh",
                                                initializer=init))))
            L.array_write(h, i, array=outs)
            L.array_write(h, L.increment(i, in_place=False), array=mems)
            L.increment(i)
            L.less_than(i, n, cond=cond)
        out = L.array_to_lod_tensor(outs, table)
        loss = L.reduce_sum(L.elementwise_mul(out, rv))
        fluid.optimizer.SGD(0.1).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    wx = np.array(scope.find_var("wx").get_tensor())
    wh = np.array(scope.find_var("wh").get_tensor())
    got = exe.run(main, scope=scope,
                  feed={"x": fluid.create_lod_tensor(x, [LENGTHS]),
                        "h0": h0, "r": r},
                  fetch_list=[out, "wx@GRAD", "wh@GRAD", "x@GRAD",
                              "h0@GRAD"])
    return wx, wh, got


def test_dynamic_rnn_loop_matches_torch_rnn_cell():
    rs = np.random.RandomState(11)
    rows = sum(LENGTHS)
    x = rs.uniform(-1, 1, (rows, D))
    h0 = rs.uniform(-1, 1, (len(LENGTHS), H))
    r = rs.uniform(-1, 1, (rows, H))
    wx, wh, got = _fluid_rnn(x, h0, r)

    cell = torch.nn.RNNCell(D, H, bias=False, nonlinearity="tanh").double()
    with torch.no_grad():
        cell.weight_ih.copy_(torch.from_numpy(wx.T))
        cell.weight_hh.copy_(torch.from_numpy(wh.T))
    tx = torch.from_numpy(x).requires_grad_()
    th0 = torch.from_numpy(h0).requires_grad_()
    offsets = np.concatenate([[0], np.cumsum(LENGTHS)])
    outs = []
    for s in range(len(LENGTHS)):
        h = th0[s:s + 1]
        for row in range(offsets[s], offsets[s + 1]):
            h = cell(tx[row:row + 1], h)
            outs.append(h)
    out = torch.cat(outs)
    (out * torch.from_numpy(r)).sum().backward()

    np.testing.assert_allclose(got[0], out.detach().numpy(), rtol=0,
                               atol=1e-10)
    want = [cell.weight_ih.grad.numpy().T, cell.weight_hh.grad.numpy().T,
            tx.grad.numpy(), th0.grad.numpy()]
    for g, w, what in zip(got[1:], want, ["wx", "wh", "x", "h0"]):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-10, err_msg=what)
