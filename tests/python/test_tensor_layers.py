"""The tensor layers of fluid.layers (concat, split, transpose, flatten,
sums, matmul, mul) run through fluid.Executor and compared with PyTorch on
the same inputs: the forward values, and the gradient that reaches the
layer's input when a small program minimises a weighted mean of its
output."""
import numpy as np
import pytest
import torch

import fluid

L = fluid.layers

# Scopes outlive the executors bound to them.
_SCOPES = []


def _run(main, startup, feed, fetch):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    _SCOPES.append(scope)
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope)


def _input(name, shape):
    """A float64 input of `shape` (leading batch dim) through which
    gradients flow: x + fc(x) with a constant weight, reshaped. Returns the
    Variable and a function giving its value for a fed x."""
    width = int(np.prod(shape[1:]))
    x = L.data(name, [width], dtype="float64")
    f = L.fc(x, width, bias_attr=False, param_attr={
        "name": name + "_w",
        "initializer": {"kind": "constant", "value": 0.25}})
    h = L.reshape(L.elementwise_add(f, x), [-1] + list(shape[1:]))

    def value(xv):
        return (xv + 0.25 * xv.sum(1, keepdims=True)).reshape(shape)
    return h, value


def _check(build, torch_fn, shapes, seed=0, outputs=None):
    """build(*inputs) -> the output Variable(s); torch_fn(*tensors) -> the
    same as torch tensors. The loss is sum over outputs of mean(out * c)
    with random c; `outputs` picks the outputs in the loss (default all).
    Forward values and input gradients must match PyTorch's."""
    rng = np.random.RandomState(seed)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ins = [_input(f"x{i}", s) for i, s in enumerate(shapes)]
        outs = build(*[h for h, _ in ins])
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        picked = range(len(outs)) if outputs is None else outputs
        weights, terms = [], []
        for k in picked:
            c = L.data(f"c{k}", list(outs[k].shape[1:]), dtype="float64")
            weights.append(c)
            terms.append(L.mean(L.elementwise_mul(outs[k], c)))
        loss = terms[0] if len(terms) == 1 else L.sums(terms)
        fluid.optimizer.SGD(0.1).minimize(loss)
    xs = [rng.uniform(-1, 1, (s[0], int(np.prod(s[1:])))) for s in shapes]
    hs = [torch.tensor(v(x), requires_grad=True)
          for (_, v), x in zip(ins, xs)]
    t_outs = torch_fn(*hs)
    t_outs = list(t_outs) if isinstance(t_outs, (list, tuple)) else [t_outs]
    feed = {f"x{i}": x for i, x in enumerate(xs)}
    t_loss = 0
    for k, c in zip(picked, weights):
        cv = rng.uniform(-1, 1, tuple(t_outs[k].shape))
        feed[c.name] = cv
        t_loss = t_loss + (t_outs[k] * torch.tensor(cv)).mean()
    t_loss.backward()
    fetch = outs + [h.name + "@GRAD" for h, _ in ins]
    got = _run(main, startup, feed, fetch)
    for k, t in enumerate(t_outs):
        np.testing.assert_allclose(got[k], t.detach().numpy(), rtol=1e-12,
                                   atol=1e-14, err_msg=f"output {k}")
    for i, h in enumerate(hs):
        np.testing.assert_allclose(got[len(outs) + i], h.grad.numpy(),
                                   rtol=1e-10, atol=1e-14,
                                   err_msg=f"gradient of input {i}")
    return main, outs


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_concat(axis):
    shapes = [[4, 3, 5], [4, 3, 5], [4, 3, 5]]
    shapes[1][axis] = 2
    main, (out,) = _check(lambda *xs: L.concat(list(xs), axis=axis),
                          lambda *ts: torch.cat(ts, dim=axis), shapes)
    assert "concat" in main.op_types() and "concat_grad" in main.op_types()


@pytest.mark.parametrize("num_or_sections,dim", [
    (2, 2), (3, -1), ([1, 4], 1), ([2, -1, 1], 2), ([5], 1)])
def test_split(num_or_sections, dim):
    def ref(t):
        size = t.shape[dim]
        if isinstance(num_or_sections, int):
            return torch.split(t, size // num_or_sections, dim=dim)
        known = sum(s for s in num_or_sections if s > 0)
        sizes = [s if s > 0 else size - known for s in num_or_sections]
        return torch.split(t, sizes, dim=dim)
    main, outs = _check(lambda x: L.split(x, num_or_sections, dim=dim), ref,
                        [[4, 5, 6]])
    assert isinstance(outs, list)
    want = 2 if num_or_sections == 2 else (
        3 if num_or_sections == 3 else len(num_or_sections))
    assert len(outs) == want


def test_split_gradient_of_one_piece():
    """Pieces the loss does not use send zero gradients."""
    _check(lambda x: L.split(x, [2, 3, 1], dim=1),
           lambda t: torch.split(t, [2, 3, 1], dim=1), [[3, 6]], outputs=[1])


@pytest.mark.parametrize("perm", [[0, 2, 1], [2, 0, 1], [1, 2, 0],
                                  [0, 1, 2]])
def test_transpose(perm):
    main, (out,) = _check(lambda x: L.transpose(x, perm),
                          lambda t: t.permute(*perm), [[3, 4, 5]], seed=1)
    assert out.shape == tuple((-1, 4, 5)[p] for p in perm)


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_flatten(axis):
    shape = [2, 3, 4, 5]

    def ref(t):
        return t.reshape(int(np.prod(shape[:axis])), -1)
    main, (out,) = _check(lambda x: L.flatten(x, axis=axis), ref, [shape])
    if axis >= 1:
        assert out.shape == (-1, int(np.prod(shape[axis:])))
    else:
        assert out.shape == (1, -1)


def test_flatten_default_axis():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 4, 5])
        y = L.flatten(x)
    assert y.shape == (-1, 60)
    assert main.op_types()[-1] == "reshape"


def test_sums():
    main, (out,) = _check(lambda *xs: L.sums(list(xs)),
                          lambda *ts: ts[0] + ts[1] + ts[2],
                          [[3, 4], [3, 4], [3, 4]])
    assert "sum" in main.op_types()


def test_sums_into_out():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        a = L.data("a", [3], dtype="float64")
        b = L.data("b", [3], dtype="float64")
        total = L.data("total", [3], dtype="float64")
        y = L.sums([a, b], out=total)
    assert y.name == "total"
    av, bv = np.ones((2, 3)), np.arange(6.0).reshape(2, 3)
    (got,) = _run(main, startup, {"a": av, "b": bv, "total": np.zeros((2, 3))},
                  [y])
    np.testing.assert_allclose(got, av + bv)


@pytest.mark.parametrize("tx,ty,alpha", [(False, False, 1.0),
                                         (True, False, 2.0),
                                         (False, True, 0.5),
                                         (True, True, -1.5)])
def test_matmul(tx, ty, alpha):
    xs = [4, 5, 3] if tx else [4, 3, 5]
    ys = [4, 2, 5] if ty else [4, 5, 2]

    def ref(x, y):
        x = x.transpose(-1, -2) if tx else x
        y = y.transpose(-1, -2) if ty else y
        return alpha * torch.matmul(x, y)
    _check(lambda x, y: L.matmul(x, y, transpose_x=tx, transpose_y=ty,
                                 alpha=alpha), ref, [xs, ys], seed=3)


@pytest.mark.parametrize("xn,y_shape", [(1, [12, 2]), (2, [4, 2])])
def test_mul(xn, y_shape):
    def ref(x, y):
        x2 = x.reshape(int(np.prod(x.shape[:xn])), -1)
        return (x2 @ y).reshape(*x.shape[:xn], -1)
    _check(lambda x, y: L.mul(x, y, x_num_col_dims=xn), ref,
           [[3, 3, 4], y_shape], seed=4)


def test_errors_name_the_layer_and_argument():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 4])
        with pytest.raises(ValueError, match=r"layer 'transpose': argument "
                           r"'perm'"):
            L.transpose(x, [0, 1])
        with pytest.raises(ValueError, match=r"transpose: axis \[0, 2, 2\]"):
            L.transpose(x, [0, 2, 2])
        with pytest.raises(ValueError, match=r"layer 'flatten': argument "
                           r"'axis'"):
            L.flatten(x, axis=4)
        with pytest.raises(ValueError, match=r"split\(num_or_sections=5\)"):
            L.split(x, 5, dim=1)
        with pytest.raises(ValueError, match=r"split: sections of X"):
            L.split(x, [2, 3], dim=1)
        with pytest.raises(ValueError, match=r"concat: input X\[1\]"):
            L.concat([x, L.data("z", [5, 4])], axis=2)
        with pytest.raises(TypeError, match=r"concat\(input=...\)"):
            L.concat(x)
