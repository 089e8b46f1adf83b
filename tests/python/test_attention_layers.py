"""The dense building blocks of attention (layer_norm, gelu, softmax on any
axis, batched matmul, reshape with 0 and -1, 4-D transpose, the causal
mask, fluid.nets.scaled_dot_product_attention) through fluid.Executor,
compared with PyTorch on the same inputs: forward values and the gradient
that reaches each input (test_tensor_layers._check, float64)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import fluid
from test_tensor_layers import _check, _run

L = fluid.layers
# layer_norm's epsilon is a float32 attr, as in Fluid: torch gets the same
# value.
EPS = float(np.float32(1e-5))


@pytest.mark.parametrize("shape,axis", [([4, 6], 1), ([3, 4, 5], 2),
                                        ([3, 4, 5], 1), ([2, 3, 2, 4], 2)])
def test_layer_norm(shape, axis):
    """The parameters start at 1 and 0, as torch's do."""
    main, (out,) = _check(
        lambda x: L.layer_norm(x, begin_norm_axis=axis),
        lambda t: F.layer_norm(t, t.shape[axis:], eps=EPS), [shape])
    assert "layer_norm_grad" in main.op_types()
    assert out.shape == tuple([-1] + shape[1:])


def test_layer_norm_epsilon_no_params_and_act():
    _check(lambda x: L.layer_norm(x, scale=False, shift=False, epsilon=0.5,
                                  act="relu"),
           lambda t: torch.relu(F.layer_norm(t, t.shape[1:], eps=0.5)),
           [[4, 7]], seed=3)


def test_layer_norm_parameters_and_gradients():
    """Given scale and shift: Y and the gradients of the scale, the shift
    and the input against torch.nn.LayerNorm."""
    rng = np.random.RandomState(5)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 8], dtype="float64")
        y = L.layer_norm(x, begin_norm_axis=2, param_attr="g", bias_attr="b")
        c = L.data("c", [3, 8], dtype="float64")
        fluid.optimizer.SGD(0.1).minimize(L.mean(L.elementwise_mul(y, c)))
    xv, cv = rng.uniform(-2, 2, (2, 3, 8)), rng.uniform(-1, 1, (2, 3, 8))
    gv, bv = rng.uniform(0.5, 2, 8), rng.uniform(-1, 1, 8)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    scope.set("g", gv)
    scope.set("b", bv)
    got = exe.run(main, feed={"x": xv, "c": cv}, scope=scope,
                  fetch_list=[y, "g@GRAD", "b@GRAD"])
    ln = torch.nn.LayerNorm(8, eps=EPS, dtype=torch.float64)
    with torch.no_grad():
        ln.weight.copy_(torch.tensor(gv))
        ln.bias.copy_(torch.tensor(bv))
    ty = ln(torch.tensor(xv))
    (ty * torch.tensor(cv)).mean().backward()
    np.testing.assert_allclose(got[0], ty.detach().numpy(), rtol=1e-12,
                               atol=1e-13)
    np.testing.assert_allclose(got[1], ln.weight.grad.numpy(), rtol=1e-10,
                               atol=1e-14)
    np.testing.assert_allclose(got[2], ln.bias.grad.numpy(), rtol=1e-10,
                               atol=1e-14)


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu(approximate):
    _check(lambda x: L.gelu(x, approximate=approximate),
           lambda t: F.gelu(t, approximate="tanh" if approximate else "none"),
           [[5, 9]], seed=2)


def test_gelu_as_fc_act():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4])
        L.fc(x, 3, act="gelu")
    assert "gelu" in main.op_types()


@pytest.mark.parametrize("axis", [-1, 0, 1, 2, 3, -3])
def test_softmax_any_axis(axis):
    main, (out,) = _check(lambda x: L.softmax(x, axis=axis),
                          lambda t: torch.softmax(t, dim=axis),
                          [[2, 3, 4, 5]], seed=4)


def test_softmax_additive_mask_zeros_and_fully_masked_rows():
    """-1e9 added where masked: exact zeros there; a row masked everywhere
    comes out finite (not NaN), as torch's does."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        s = L.data("s", [4, 4])
        m = L.data("m", [4], append_batch_size=False)
        p = L.softmax(L.elementwise_add(s, m))
    sv = np.random.RandomState(1).uniform(-3, 3, (2, 4, 4)).astype("float32")
    mv = np.array([0, 0, -1e9, -1e9], dtype="float32")
    (got,) = _run(main, startup, {"s": sv, "m": mv}, [p])
    want = torch.softmax(torch.tensor(sv) + torch.tensor(mv), -1).numpy()
    assert (got[..., 2:] == 0).all()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    full = np.full(4, -1e9, dtype="float32")
    (got,) = _run(main, startup, {"s": sv, "m": full}, [p])
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got.sum(-1), 1, rtol=1e-6)


@pytest.mark.parametrize("tx,ty", [(False, False), (True, False),
                                   (False, True), (True, True)])
@pytest.mark.parametrize("y_rank", [4, 2])
def test_matmul_4d(tx, ty, y_rank):
    xs = [2, 3, 5, 4] if tx else [2, 3, 4, 5]
    ys = [6, 5] if ty else [5, 6]
    if y_rank == 4:
        ys = [2, 3] + ys

    def ref(x, y):
        x = x.transpose(-1, -2) if tx else x
        y = y.transpose(-1, -2) if ty else y
        return 0.5 * torch.matmul(x, y)
    # A rank-2 y is fed as [1, ...] and reshaped: data always has a batch.
    y_shape = ys if y_rank == 4 else [1] + ys

    def build(x, y):
        if y_rank == 2:
            y = L.reshape(y, ys)
        return L.matmul(x, y, transpose_x=tx, transpose_y=ty, alpha=0.5)

    def torch_fn(x, y):
        return ref(x, y.reshape(ys) if y_rank == 2 else y)
    main, (out,) = _check(build, torch_fn, [xs, y_shape], seed=6)
    assert out.shape[1:] == (3, 4, 6)


def test_reshape_copy_and_infer_dims():
    main, (out,) = _check(lambda x: L.reshape(x, [0, -1, 2]),
                          lambda t: t.reshape(t.shape[0], -1, 2),
                          [[3, 4, 6]])
    assert out.shape == (-1, 12, 2)
    _check(lambda x: L.reshape(x, [0, 0, 3, 2], act="tanh"),
           lambda t: torch.tanh(t.reshape(3, 4, 3, 2)), [[3, 4, 6]])
    with pytest.raises(NotImplementedError, match="actual_shape"):
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            L.reshape(L.data("x", [6]), [-1, 3], actual_shape="s")


@pytest.mark.parametrize("perm", [[0, 2, 1, 3], [0, 3, 1, 2], [3, 2, 1, 0]])
def test_transpose_4d(perm):
    _check(lambda x: L.transpose(x, perm), lambda t: t.permute(*perm),
           [[2, 3, 4, 5]])


def _torch_attention(q, k, v, heads, mask=None):
    """The scale 1 / sqrt(d) is a float32 attr of the scale op, as in Fluid:
    rounded here the same way."""
    def split(t):
        b, n, d = t.shape
        return t.reshape(b, n, heads, d // heads).transpose(1, 2)
    qh, kh, vh = split(q), split(k), split(v)
    scale = float(np.float32((q.shape[-1] // heads) ** -0.5))
    s = (qh * scale) @ kh.transpose(-1, -2)
    if mask is not None:
        s = s + mask
    out = torch.softmax(s, -1) @ vh
    b, h, n, d = out.shape
    return out.transpose(1, 2).reshape(b, n, h * d)


@pytest.mark.parametrize("heads", [1, 2, 4])
def test_scaled_dot_product_attention(heads):
    _check(lambda q, k, v: fluid.nets.scaled_dot_product_attention(
        q, k, v, num_heads=heads),
        lambda q, k, v: _torch_attention(q, k, v, heads),
        [[2, 5, 8], [2, 6, 8], [2, 6, 4]], seed=7)


def test_scaled_dot_product_attention_causal():
    """With the causal mask: the same as torch, and the future gets weight
    exactly 0 (changing a later key or value leaves earlier outputs)."""
    seq = 5
    mask = torch.triu(torch.full((seq, seq), -1e9, dtype=torch.float64), 1)

    def build(q, k, v):
        return fluid.nets.scaled_dot_product_attention(
            q, k, v, num_heads=2,
            additive_mask=L.causal_attention_mask(seq, "float64"))
    _check(build, lambda q, k, v: _torch_attention(q, k, v, 2, mask),
           [[3, seq, 8], [3, seq, 8], [3, seq, 8]], seed=8)


def test_causal_attention_mask_values():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        m32 = L.causal_attention_mask(3)
        m64 = L.causal_attention_mask(3, "float64", masked_value=-1e4)
    a, b = _run(main, startup, {}, [m32, m64])
    assert a.dtype == np.float32 and b.dtype == np.float64
    np.testing.assert_array_equal(a, [[0, -1e9, -1e9], [0, 0, -1e9],
                                      [0, 0, 0]])
    np.testing.assert_array_equal(b, [[0, -1e4, -1e4], [0, 0, -1e4],
                                      [0, 0, 0]])


def test_attention_errors_name_the_argument():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        q = L.data("q", [4, 6])
        k = L.data("k", [4, 6])
        with pytest.raises(ValueError, match="num_heads=4"):
            fluid.nets.scaled_dot_product_attention(q, k, k, num_heads=4)
        with pytest.raises(ValueError, match="3-D"):
            fluid.nets.scaled_dot_product_attention(L.data("p", [6]), k, k)
        with pytest.raises(Exception, match="layer_norm.*begin_norm_axis"):
            L.layer_norm(q, begin_norm_axis=3)


def test_fill_constant_batch_size_like():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3])
        ones = L.fill_constant_batch_size_like(x, [-1, 2, 4], "float32", 1.0)
        ids = L.fill_constant_batch_size_like(x, [2, 1], "int64", 7,
                                              input_dim_idx=1,
                                              output_dim_idx=1)
    assert ones.shape == (-1, 2, 4) and ids.shape == (2, 3)
    a, b = _run(main, startup, {"x": np.zeros((5, 3), "float32")},
                [ones, ids])
    np.testing.assert_array_equal(a, np.ones((5, 2, 4), "float32"))
    assert b.dtype == np.int64
    np.testing.assert_array_equal(b, np.full((2, 3), 7))


def test_scaled_dot_product_attention_dropout():
    """dropout_rate drops attention weights in training (Fluid's
    downgrade_in_infer: kept weights are not rescaled), so some outputs
    change; the rest of the computation is as without it."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        q = L.data("q", [4, 8], dtype="float64")
        plain = fluid.nets.scaled_dot_product_attention(q, q, q, num_heads=2)
        dropped = fluid.nets.scaled_dot_product_attention(
            q, q, q, num_heads=2, dropout_rate=0.5)
    assert main.op_types().count("dropout") == 1
    qv = np.random.RandomState(9).uniform(-1, 1, (3, 4, 8))
    a, b = _run(main, startup, {"q": qv}, [plain, dropped])
    assert a.shape == b.shape == (3, 4, 8)
    assert not np.allclose(a, b)
    np.testing.assert_allclose(a, _torch_attention(
        torch.tensor(qv), torch.tensor(qv), torch.tensor(qv), 2).numpy(),
        rtol=1e-12, atol=1e-14)
