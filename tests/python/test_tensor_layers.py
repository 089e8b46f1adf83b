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
    assert len(outs) == (num_or_sections if isinstance(num_or_sections, int)
                         else len(num_or_sections))


def test_split_returns_a_list():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [6])
        one = L.split(x, 1)
        three = L.split(x, [1, -1, 2])
    assert isinstance(one, list) and len(one) == 1
    assert [p.shape for p in three] == [(-1, 1), (-1, 3), (-1, 2)]


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
        with pytest.raises(ValueError, match=r"layer 'sums': argument 'out': "
                           r"no variable 'nope'"):
            L.sums([x], out="nope")


@pytest.mark.parametrize("src,dst", [("float32", "float64"),
                                     ("float64", "float32"),
                                     ("float64", "int32"),
                                     ("float32", "int64"),
                                     ("int64", "float32"),
                                     ("int32", "float64"),
                                     ("int64", "int32")])
def test_cast(src, dst):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [5], dtype=src)
        y = L.cast(x, dst)
    assert y.dtype == dst and y.shape == (-1, 5)
    xv = (np.random.RandomState(1).uniform(-20, 20, (3, 5))).astype(src)
    (got,) = _run(main, startup, {"x": xv}, [y])
    want = torch.tensor(xv).to(getattr(torch, dst)).numpy()
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(got, want)


def test_cast_gradient_casts_back():
    _check(lambda x: L.cast(L.cast(x, "float32"), "float64"),
           lambda t: t.float().double(), [[3, 4]])


def test_cast_takes_numpy_dtypes():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        y = L.cast(L.data("x", [2]), np.float64)
    assert y.dtype == "float64"


def test_assign():
    main, (out,) = _check(lambda x: L.assign(x), lambda t: t.clone(),
                          [[3, 4]])
    assert "assign" in main.op_types()


def test_assign_into_output():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3], dtype="int64")
        target = L.data("target", [3], dtype="int64")
        y = L.assign(x, output=target)
    assert y.name == "target"
    xv = np.arange(6).reshape(2, 3)
    (got,) = _run(main, startup, {"x": xv, "target": np.zeros((2, 3), "int64")},
                  [y])
    np.testing.assert_array_equal(got, xv)


def test_one_hot():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = L.data("ids", [1], dtype="int64")
        y = L.one_hot(ids, depth=7)
    assert y.shape == (-1, 7) and y.dtype == "float32"
    iv = np.array([[3], [0], [6], [3]])
    (got,) = _run(main, startup, {"ids": iv}, [y])
    want = torch.nn.functional.one_hot(torch.tensor(iv[:, 0]), 7).float()
    np.testing.assert_array_equal(got, want.numpy())


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_argmax(axis):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4, 5], dtype="float64")
        y = L.argmax(x, axis=axis)
    assert y.dtype == "int64"
    xv = np.random.RandomState(2).uniform(-1, 1, (3, 4, 5))
    (got,) = _run(main, startup, {"x": xv}, [y])
    np.testing.assert_array_equal(got, torch.argmax(torch.tensor(xv),
                                                    dim=axis).numpy())


def test_argmax_default_axis():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        y = L.argmax(L.data("x", [4], dtype="float64"))
    xv = np.random.RandomState(3).uniform(-1, 1, (6, 4))
    (got,) = _run(main, startup, {"x": xv}, [y])
    np.testing.assert_array_equal(got, np.argmax(xv, axis=0))


@pytest.mark.parametrize("k", [1, 3, 6])
def test_topk(k):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [6], dtype="float64")
        values, indices = L.topk(x, k)
    assert values.shape == (-1, k) and indices.dtype == "int64"
    xv = np.random.RandomState(k).uniform(-1, 1, (5, 6))
    got_v, got_i = _run(main, startup, {"x": xv}, [values, indices])
    want = torch.topk(torch.tensor(xv), k)
    np.testing.assert_array_equal(got_v, want.values.numpy())
    np.testing.assert_array_equal(got_i, want.indices.numpy())


@pytest.mark.parametrize("k", [1, 2, 4])
def test_topk_gradient(k):
    _check(lambda x: L.topk(x, k)[0], lambda t: torch.topk(t, k).values,
           [[3, 2, 4]], seed=k)


def test_conversion_errors_name_the_layer_and_argument():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3])
        ids = L.data("ids", [1], dtype="int64")
        with pytest.raises(ValueError, match=r"layer 'cast': argument "
                           r"'dtype': unknown dtype 'int8'"):
            L.cast(x, "int8")
        with pytest.raises(ValueError, match=r"layer 'topk': argument 'k'"):
            L.topk(x, 0)
        with pytest.raises(ValueError, match=r"top_k: k 4 must be in"):
            L.topk(x, 4)
        with pytest.raises(ValueError, match=r"layer 'one_hot': argument "
                           r"'depth'"):
            L.one_hot(ids, 0)
        with pytest.raises(ValueError, match=r"one_hot: X 'x' must be int64"):
            L.one_hot(x, 3)
        with pytest.raises(ValueError, match=r"arg_max: axis 2"):
            L.argmax(x, axis=2)
        with pytest.raises(TypeError, match=r"assign\(input=...\): a NumPy "
                           r"array of float64 is not supported"):
            L.assign(np.ones(3))


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_accuracy_top_k(k):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [5], dtype="float64")
        label = L.data("label", [1], dtype="int64")
        correct = L.data("correct", [1], dtype="int64", append_batch_size=False)
        total = L.data("total", [1], dtype="int64", append_batch_size=False)
        acc = L.accuracy(x, label, k=k, correct=correct, total=total)
    rng = np.random.RandomState(k)
    xv = rng.uniform(-1, 1, (40, 5))
    lv = rng.randint(0, 5, (40, 1))
    got_acc, got_c, got_t = _run(
        main, startup, {"x": xv, "label": lv,
                        "correct": np.zeros(1, "int64"),
                        "total": np.zeros(1, "int64")},
        [acc, correct, total])
    top = torch.topk(torch.tensor(xv), k).indices.numpy()
    hits = int((top == lv).any(axis=1).sum())
    assert got_c[0] == hits and got_t[0] == 40
    np.testing.assert_allclose(got_acc, [hits / 40], rtol=1e-15)


def test_accuracy_counts_into_create_tensor():
    # Fluid's book form: the batch size counted into a create_tensor.
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [5], dtype="float64")
        label = L.data("label", [1], dtype="int64")
        batch_size = fluid.layers.create_tensor(dtype="int64")
        correct = fluid.layers.create_tensor("int64", name="hits")
        acc = L.accuracy(input=x, label=label, correct=correct,
                         total=batch_size)
        with pytest.raises(NotImplementedError, match="create_global_var"):
            fluid.layers.create_tensor("float32", persistable=True)
        with pytest.raises(ValueError, match="'hits' exists already"):
            fluid.layers.create_tensor("int64", name="hits")
    assert correct.name == "hits" and batch_size.dtype == "int64"
    rng = np.random.RandomState(3)
    xv, lv = rng.uniform(-1, 1, (24, 5)), rng.randint(0, 5, (24, 1))
    got_acc, got_c, got_n = _run(main, startup, {"x": xv, "label": lv},
                                 [acc, correct, batch_size])
    hits = int((xv.argmax(1)[:, None] == lv).sum())
    assert got_n.tolist() == [24] and got_c.tolist() == [hits]
    np.testing.assert_allclose(got_acc, [hits / 24], rtol=1e-15)


def test_cross_entropy_soft_label():
    rng = np.random.RandomState(5)
    zv = rng.uniform(0.1, 1, (4, 6))
    zv /= zv.sum(1, keepdims=True)

    def build(x):
        p = L.softmax(x)
        z = L.data("z", [6], dtype="float64")
        return L.cross_entropy(p, z, soft_label=True)

    def ref(t):
        p = torch.softmax(t, dim=-1)
        return -(torch.tensor(zv) * torch.log(p)).sum(-1, keepdim=True)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        h, value = _input("x0", [4, 6])
        y = build(h)
        loss = L.mean(y)
        fluid.optimizer.SGD(0.1).minimize(loss)
    xv = rng.uniform(-1, 1, (4, 6))
    t = torch.tensor(value(xv), requires_grad=True)
    want = ref(t)
    want.mean().backward()
    got_y, got_g = _run(main, startup, {"x0": xv, "z": zv},
                        [y, h.name + "@GRAD"])
    assert y.shape == (-1, 1)
    np.testing.assert_allclose(got_y, want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(got_g, t.grad.numpy(), rtol=1e-10,
                               atol=1e-15)


def test_cross_entropy_hard_label_ignore_index():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        p = L.softmax(L.data("x", [4], dtype="float64"))
        label = L.data("label", [1], dtype="int64")
        y = L.cross_entropy(p, label, ignore_index=3)
    xv = np.random.RandomState(6).uniform(-1, 1, (5, 4))
    lv = np.array([[0], [3], [2], [1], [3]])
    (got,) = _run(main, startup, {"x": xv, "label": lv}, [y])
    want = torch.nn.functional.nll_loss(
        torch.log_softmax(torch.tensor(xv), -1), torch.tensor(lv[:, 0]),
        ignore_index=3, reduction="none")
    np.testing.assert_allclose(got[:, 0], want.numpy(), rtol=1e-12)


def test_square_error_cost():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        h, value = _input("x0", [3, 4])
        label = L.data("label", [4], dtype="float64")
        y = L.square_error_cost(h, label)
        loss = L.mean(y)
        fluid.optimizer.SGD(0.1).minimize(loss)
    assert main.op_types()[3:5] == ["elementwise_sub", "square"]
    rng = np.random.RandomState(8)
    xv, lv = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3, 4))
    t = torch.tensor(value(xv), requires_grad=True)
    want = torch.nn.functional.mse_loss(t, torch.tensor(lv), reduction="none")
    want.mean().backward()
    got_y, got_g = _run(main, startup, {"x0": xv, "label": lv},
                        [y, h.name + "@GRAD"])
    np.testing.assert_allclose(got_y, want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(got_g, t.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("normalize,ignore", [(False, -100), (True, -100),
                                              (False, -1), (True, -1)])
def test_sigmoid_cross_entropy_with_logits(normalize, ignore):
    rng = np.random.RandomState(9)
    zv = rng.uniform(0, 1, (4, 5))
    zv[0, 1] = zv[2, 3] = -1  # ignored when ignore_index is -1
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        h, value = _input("x0", [4, 5])
        z = L.data("z", [5], dtype="float64")
        y = L.sigmoid_cross_entropy_with_logits(
            h, z, ignore_index=ignore, normalize=normalize)
        loss = L.mean(y)
        fluid.optimizer.SGD(0.1).minimize(loss)
    xv = rng.uniform(-3, 3, (4, 5)) * 4
    t = torch.tensor(value(xv), requires_grad=True)
    zt = torch.tensor(zv)
    keep = (zt != ignore).double()
    want = torch.nn.functional.binary_cross_entropy_with_logits(
        t, zt, reduction="none") * keep
    if normalize:
        want = want / keep.sum()
    want.mean().backward()
    got_y, got_g = _run(main, startup, {"x0": xv, "z": zv},
                        [y, h.name + "@GRAD"])
    np.testing.assert_allclose(got_y, want.detach().numpy(), rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(got_g, t.grad.numpy(), rtol=1e-10,
                               atol=1e-15)


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_assign_numpy(dtype):
    rng = np.random.RandomState(10)
    value = (rng.uniform(-1e3, 1e3, (3, 4))).astype(dtype)
    value.flat[0] = np.float32(0.1) if dtype == "float32" else 2**30
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        y = L.assign(value)
        twice = L.sums([L.cast(y, "float64"), L.cast(y, "float64")])
    assert y.shape == (3, 4) and y.dtype == dtype
    assert "assign_value" in main.op_types()
    got_y, got_t = _run(main, startup, {}, [y, twice])
    np.testing.assert_array_equal(got_y, torch.tensor(value).numpy())
    np.testing.assert_array_equal(got_t, 2 * value.astype("float64"))


def test_assign_numpy_into_output():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        target = L.data("target", [2], dtype="int64",
                        append_batch_size=False)
        y = L.assign(np.array([5, -6], dtype="int64"), output=target)
    assert y.name == "target"
    (got,) = _run(main, startup, {"target": np.zeros(2, "int64")}, [y])
    np.testing.assert_array_equal(got, [5, -6])
