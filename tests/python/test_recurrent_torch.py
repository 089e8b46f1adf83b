"""The recurrent layers against PyTorch in float64: dynamic_lstm's hidden
state and the gradients of its weight, its bias and its input against
torch.nn.LSTM run on packed sequences, the weights converted (Fluid's gate
blocks {c, i, f, o} -> torch's {i, f, g, o}), forward and reverse, with and
without initial states; lstm_unit against torch.nn.LSTMCell; dynamic_gru
and gru_unit against Fluid's GRU recurrence written in torch ops (torch's
GRU applies the reset gate elsewhere) and differentiated by autograd."""
import numpy as np
import pytest

import fluid

torch = pytest.importorskip("torch")
L = fluid.layers
LENGTHS = [3, 1, 5, 2]
TORCH_BLOCKS = [1, 2, 0, 3]  # torch's block b is Fluid's TORCH_BLOCKS[b]


def _to_torch_gates(m, d):
    """Fluid's [..., 4D] columns (or [4D] vector) as torch's block order."""
    return np.concatenate([m[..., b * d:(b + 1) * d] for b in TORCH_BLOCKS],
                          axis=-1)


def _from_torch_gates(m, d):
    out = np.empty_like(m)
    for tb, fb in enumerate(TORCH_BLOCKS):
        out[..., fb * d:(fb + 1) * d] = m[..., tb * d:(tb + 1) * d]
    return out


def _lod(values):
    return fluid.create_lod_tensor(values, [LENGTHS], fluid.CPUPlace())


def _fluid_lstm(d, proj, w, b, r, is_reverse, state):
    """(hidden, d loss / d input, d loss / d weight, d loss / d bias) of
    loss = mean(hidden * r), from dynamic_lstm without peepholes."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4 * d], dtype="float64", lod_level=1)
        # An fc that copies x, so that the lstm's input gets a gradient.
        proj_in = L.fc(x, 4 * d, param_attr="eye", bias_attr=False)
        h0 = c0 = None
        if state is not None:
            h0 = L.data("h0", [d], dtype="float64")
            c0 = L.data("c0", [d], dtype="float64")
        hidden, cell = L.dynamic_lstm(
            proj_in, 4 * d, h_0=h0, c_0=c0, param_attr="lstm_w",
            bias_attr="lstm_b", use_peepholes=False, is_reverse=is_reverse,
            dtype="float64")
        rr = L.data("r", [d], dtype="float64", lod_level=1)
        fluid.optimizer.SGD(0.1).minimize(
            L.mean(L.elementwise_mul(hidden, rr)))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    for name, value in (("eye", np.eye(4 * d)), ("lstm_w", w),
                        ("lstm_b", b)):
        scope.set(name, value)
    feed = {"x": _lod(proj), "r": _lod(r)}
    if state is not None:
        feed["h0"], feed["c0"] = state
    return exe.run(main, feed=feed, scope=scope,
                   fetch_list=[hidden, proj_in.name + "@GRAD", "lstm_w@GRAD",
                               "lstm_b@GRAD"])


def _torch_lstm(d, proj, w, b, r, is_reverse, state):
    """The same through torch.nn.LSTM on packed sequences: torch's input
    is the projection itself (W_ih the identity in torch's block order)."""
    lstm = torch.nn.LSTM(4 * d, d, dtype=torch.float64)
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(torch.from_numpy(_to_torch_gates(
            np.eye(4 * d), d).T.copy()))
        lstm.weight_hh_l0.copy_(torch.from_numpy(_to_torch_gates(w, d).T
                                                 .copy()))
        lstm.bias_ih_l0.copy_(torch.from_numpy(_to_torch_gates(b[0], d)))
        lstm.bias_hh_l0.zero_()
    x = torch.from_numpy(proj).requires_grad_()
    offsets = np.cumsum([0] + LENGTHS)
    seqs = [x[offsets[i]:offsets[i + 1]] for i in range(len(LENGTHS))]
    if is_reverse:
        seqs = [s.flip(0) for s in seqs]
    packed = torch.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)
    hx = None
    if state is not None:
        hx = tuple(torch.from_numpy(s)[None] for s in state)
    out, _ = lstm(packed, hx)
    padded, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
    rows = [padded[i, :n] for i, n in enumerate(LENGTHS)]
    if is_reverse:
        rows = [s.flip(0) for s in rows]
    hidden = torch.cat(rows)
    (hidden * torch.from_numpy(r)).mean().backward()
    dw = _from_torch_gates(lstm.weight_hh_l0.grad.numpy().T, d)
    db = _from_torch_gates(lstm.bias_ih_l0.grad.numpy(), d)[None]
    return hidden.detach().numpy(), x.grad.numpy(), dw, db


@pytest.mark.parametrize("is_reverse", [False, True])
@pytest.mark.parametrize("with_state", [False, True])
def test_dynamic_lstm_matches_torch_lstm_on_packed_sequences(is_reverse,
                                                             with_state):
    d, rows = 3, sum(LENGTHS)
    rng = np.random.RandomState(7 + is_reverse + 2 * with_state)
    proj = rng.uniform(-1, 1, (rows, 4 * d))
    w = rng.uniform(-0.7, 0.7, (d, 4 * d))
    b = rng.uniform(-0.5, 0.5, (1, 4 * d))
    r = rng.uniform(-1, 1, (rows, d))
    state = None
    if with_state:
        state = (rng.uniform(-1, 1, (len(LENGTHS), d)),
                 rng.uniform(-1, 1, (len(LENGTHS), d)))
    got = _fluid_lstm(d, proj, w, b, r, is_reverse, state)
    want = _torch_lstm(d, proj, w, b, r, is_reverse, state)
    for name, g, t in zip(["hidden", "input grad", "weight grad",
                           "bias grad"], got, want):
        np.testing.assert_allclose(np.array(g), t, rtol=1e-10, atol=1e-13,
                                   err_msg=name)


def test_dynamic_lstm_refuses_a_size_that_is_not_four_widths():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = L.data("x", [12], dtype="float32", lod_level=1)
        with pytest.raises(Exception, match="dynamic_lstm.*'size'"):
            L.dynamic_lstm(x, 10)
        with pytest.raises(Exception, match="dynamic_lstm.*'input'"):
            L.dynamic_lstm(x, 16)
        with pytest.raises(Exception, match="gate_activation"):
            L.dynamic_lstm(x, 12, gate_activation="softsign")


# ---- dynamic_gru: torch.nn.GRU applies the reset gate after the product
# (r * (h W_hn + b_hn)), Fluid's gru before it ((r * h) W_c), so the
# reference is Fluid's recurrence written in torch ops, differentiated by
# torch's autograd.

def _torch_gru_step(g, h, w_ur, w_c, origin_mode):
    """Fluid's GRU step on gate input g (bias included) from h."""
    d = h.shape[-1]
    ur = torch.sigmoid(g[..., :2 * d] + h @ w_ur)
    u, rr = ur[..., :d], ur[..., d:]
    c = torch.tanh(g[..., 2 * d:] + (rr * h) @ w_c)
    return u * h + (1 - u) * c if origin_mode else (1 - u) * h + u * c


def _split_gru_weight(wt, d):
    """Fluid's gru weight memory: W_ur [D, 2D], then W_c [D, D]."""
    flat = wt.reshape(-1)
    return flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d)


def _torch_gru(d, proj, w, b, r, is_reverse, origin_mode, h0):
    x = torch.from_numpy(proj).requires_grad_()
    wt = torch.from_numpy(w).requires_grad_()
    bt = torch.from_numpy(b).requires_grad_()
    w_ur, w_c = _split_gru_weight(wt, d)
    offsets = np.cumsum([0] + LENGTHS)
    rows = [None] * offsets[-1]
    for i, n in enumerate(LENGTHS):
        h = (torch.zeros(d, dtype=torch.float64) if h0 is None
             else torch.from_numpy(h0[i]))
        for t in range(n):
            row = offsets[i] + (n - 1 - t if is_reverse else t)
            h = _torch_gru_step(x[row] + bt[0], h, w_ur, w_c, origin_mode)
            rows[row] = h
    hidden = torch.stack(rows)
    (hidden * torch.from_numpy(r)).mean().backward()
    return hidden.detach().numpy(), x.grad.numpy(), wt.grad.numpy(), \
        bt.grad.numpy()


def _fluid_gru(d, proj, w, b, r, is_reverse, origin_mode, h0):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3 * d], dtype="float64", lod_level=1)
        proj_in = L.fc(x, 3 * d, param_attr="eye", bias_attr=False)
        h_0 = None if h0 is None else L.data("h0", [d], dtype="float64")
        hidden = L.dynamic_gru(proj_in, d, param_attr="gru_w",
                               bias_attr="gru_b", is_reverse=is_reverse,
                               h_0=h_0, origin_mode=origin_mode)
        rr = L.data("r", [d], dtype="float64", lod_level=1)
        fluid.optimizer.SGD(0.1).minimize(
            L.mean(L.elementwise_mul(hidden, rr)))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    for name, value in (("eye", np.eye(3 * d)), ("gru_w", w), ("gru_b", b)):
        scope.set(name, value)
    feed = {"x": _lod(proj), "r": _lod(r)}
    if h0 is not None:
        feed["h0"] = h0
    return exe.run(main, feed=feed, scope=scope,
                   fetch_list=[hidden, proj_in.name + "@GRAD", "gru_w@GRAD",
                               "gru_b@GRAD"])


@pytest.mark.parametrize("is_reverse", [False, True])
@pytest.mark.parametrize("origin_mode", [False, True])
def test_dynamic_gru_matches_fluids_recurrence_under_torch_autograd(
        is_reverse, origin_mode):
    d, rows = 3, sum(LENGTHS)
    rng = np.random.RandomState(20 + is_reverse + 2 * origin_mode)
    proj = rng.uniform(-1, 1, (rows, 3 * d))
    w = rng.uniform(-0.7, 0.7, (d, 3 * d))
    b = rng.uniform(-0.5, 0.5, (1, 3 * d))
    r = rng.uniform(-1, 1, (rows, d))
    h0 = rng.uniform(-1, 1, (len(LENGTHS), d)) if is_reverse else None
    args = (d, proj, w, b, r, is_reverse, origin_mode, h0)
    got, want = _fluid_gru(*args), _torch_gru(*args)
    for name, g, t in zip(["hidden", "input grad", "weight grad",
                           "bias grad"], got, want):
        np.testing.assert_allclose(np.array(g), t, rtol=1e-10, atol=1e-13,
                                   err_msg=name)


def test_dynamic_gru_without_bias_and_its_errors():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = L.data("x", [12], dtype="float32", lod_level=1)
        h = L.dynamic_gru(x, 4, bias_attr=False)
        assert h.shape == (-1, 4)
        assert "gru" in main.op_types()
        with pytest.raises(Exception, match="dynamic_gru.*'input'"):
            L.dynamic_gru(x, 3)
        with pytest.raises(Exception, match="candidate_activation"):
            L.dynamic_gru(x, 4, candidate_activation="gelu")


# ---- one step: lstm_unit against torch.nn.LSTMCell, gru_unit against
# Fluid's step in torch ops.

def _run_step(build, feed, params, fetch):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        outs = build()
        fluid.optimizer.SGD(0.1).minimize(L.mean(outs[0]))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    for name, value in params.items():
        scope.set(name, value)
    return exe.run(main, feed=feed, scope=scope,
                   fetch_list=list(outs[1:]) + fetch)


def test_lstm_unit_matches_torch_lstm_cell():
    # forget_bias is a float32 attr, as in Fluid: torch gets the same value.
    n, e, d, forget_bias = 4, 5, 3, float(np.float32(0.7))
    rng = np.random.RandomState(3)
    x, h, c = (rng.uniform(-1, 1, (n, k)) for k in (e, d, d))
    w = rng.uniform(-0.6, 0.6, (e + d, 4 * d))
    b = rng.uniform(-0.5, 0.5, 4 * d)
    rh, rc = rng.uniform(-1, 1, (n, d)), rng.uniform(-1, 1, (n, d))

    def build():
        xs = [L.data(k, [v.shape[1]], dtype="float64")
              for k, v in (("x", x), ("h", h), ("c", c), ("rh", rh),
                           ("rc", rc))]
        hidden, cell = L.lstm_unit(xs[0], xs[1], xs[2],
                                   forget_bias=forget_bias, param_attr="uw",
                                   bias_attr="ub")
        loss = L.elementwise_add(L.elementwise_mul(hidden, xs[3]),
                                 L.elementwise_mul(cell, xs[4]))
        return loss, hidden, cell
    got = _run_step(build, {"x": x, "h": h, "c": c, "rh": rh, "rc": rc},
                    {"uw": w, "ub": b}, ["uw@GRAD", "ub@GRAD"])

    # Fluid's blocks {i, f, o, j} -> torch's {i, f, g, o}.
    blocks = [0, 1, 3, 2]

    def to_torch(m):
        return np.concatenate([m[..., k * d:(k + 1) * d] for k in blocks], -1)
    cell_t = torch.nn.LSTMCell(e, d, dtype=torch.float64)
    tb = to_torch(b)
    tb[d:2 * d] += forget_bias
    with torch.no_grad():
        cell_t.weight_ih.copy_(torch.from_numpy(to_torch(w[:e]).T.copy()))
        cell_t.weight_hh.copy_(torch.from_numpy(to_torch(w[e:]).T.copy()))
        cell_t.bias_ih.copy_(torch.from_numpy(tb))
        cell_t.bias_hh.zero_()
    th, tc = cell_t(torch.from_numpy(x),
                    (torch.from_numpy(h), torch.from_numpy(c)))
    (th * torch.from_numpy(rh) + tc * torch.from_numpy(rc)).mean().backward()
    dw = np.concatenate([cell_t.weight_ih.grad.numpy().T,
                         cell_t.weight_hh.grad.numpy().T])
    want = [th.detach().numpy(), tc.detach().numpy(), dw,
            cell_t.bias_ih.grad.numpy()]
    for k in range(2, 4):  # torch's blocks back to Fluid's
        out = np.empty_like(want[k])
        for tb_, fb in enumerate(blocks):
            out[..., fb * d:(fb + 1) * d] = want[k][..., tb_ * d:(tb_ + 1) * d]
        want[k] = out
    for name, g, t in zip(["hidden", "cell", "weight grad", "bias grad"],
                          got, want):
        np.testing.assert_allclose(np.array(g).reshape(t.shape), t,
                                   rtol=1e-10, atol=1e-13, err_msg=name)


@pytest.mark.parametrize("origin_mode", [False, True])
def test_gru_unit_matches_fluids_step_under_torch_autograd(origin_mode):
    n, d = 4, 3
    rng = np.random.RandomState(9 + origin_mode)
    x, h = rng.uniform(-1, 1, (n, 3 * d)), rng.uniform(-1, 1, (n, d))
    w, b = rng.uniform(-0.7, 0.7, (d, 3 * d)), rng.uniform(-.5, .5, (1, 3 * d))
    r = rng.uniform(-1, 1, (n, d))

    def build():
        xv = L.data("x", [3 * d], dtype="float64")
        hv = L.data("h", [d], dtype="float64")
        rv = L.data("r", [d], dtype="float64")
        hidden, reset, gate = L.gru_unit(xv, hv, 3 * d, param_attr="gw",
                                         bias_attr="gb",
                                         origin_mode=origin_mode)
        assert reset.shape == (-1, d) and gate.shape == (-1, 3 * d)
        return L.elementwise_mul(hidden, rv), hidden
    got = _run_step(build, {"x": x, "h": h, "r": r}, {"gw": w, "gb": b},
                    ["gw@GRAD", "gb@GRAD"])
    wt = torch.from_numpy(w).requires_grad_()
    bt = torch.from_numpy(b).requires_grad_()
    w_ur, w_c = _split_gru_weight(wt, d)
    th = _torch_gru_step(torch.from_numpy(x) + bt, torch.from_numpy(h), w_ur,
                         w_c, origin_mode)
    (th * torch.from_numpy(r)).mean().backward()
    for name, g, t in zip(["hidden", "weight grad", "bias grad"], got,
                          [th.detach().numpy(), wt.grad.numpy(),
                           bt.grad.numpy()]):
        np.testing.assert_allclose(np.array(g), t, rtol=1e-10, atol=1e-13,
                                   err_msg=name)
