"""The reduction and data-movement layers (reduce_*, squeeze, unsqueeze,
stack, unstack, expand, gather, slice, shape) through fluid.Executor,
compared with PyTorch 1.13 on the same inputs: forward values and the
gradient that reaches each input (test_tensor_layers._check, float64)."""
import numpy as np
import pytest
import torch

import fluid
from test_tensor_layers import _check, _run

L = fluid.layers
builtins_slice = slice

_REDUCE = {"reduce_sum": torch.sum, "reduce_mean": torch.mean,
           "reduce_max": torch.amax, "reduce_min": torch.amin}


@pytest.mark.parametrize("layer", sorted(_REDUCE) + ["reduce_prod"])
@pytest.mark.parametrize("dim,keep_dim", [(1, False), (-1, True),
                                          ([1, 2], False), ([2, 1], True)])
def test_reduce(layer, dim, keep_dim):
    def torch_fn(t):
        dims = dim if isinstance(dim, list) else [dim]
        if layer == "reduce_prod":
            out = t
            for d in sorted((d % 3 for d in dims), reverse=True):
                out = torch.prod(out, d, keepdim=keep_dim)
            return out
        return _REDUCE[layer](t, dims, keepdim=keep_dim)
    main, (out,) = _check(
        lambda x: getattr(L, layer)(x, dim=dim, keep_dim=keep_dim),
        torch_fn, [[2, 3, 4]], seed=len(layer))
    assert layer + "_grad" in main.op_types()


def test_reduce_every_dim():
    """dim=None (and a dim naming every dim) reduce to shape [1]."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 4], dtype="float64")
        outs = [L.reduce_sum(x), L.reduce_max(x, dim=[0, 1, 2]),
                L.reduce_mean(x, keep_dim=True), L.reduce_prod(x, dim=[])]
    assert [o.shape for o in outs] == [(1,), (1,), (1, 1, 1), (1,)]
    xv = np.random.RandomState(1).uniform(0.5, 1.5, (2, 3, 4))
    got = _run(main, startup, {"x": xv}, outs)
    np.testing.assert_allclose(got[0], [xv.sum()], rtol=1e-12)
    np.testing.assert_allclose(got[1], [xv.max()], rtol=1e-12)
    np.testing.assert_allclose(got[2], xv.mean().reshape(1, 1, 1), rtol=1e-12)
    np.testing.assert_allclose(got[3], [xv.prod()], rtol=1e-12)


def test_reduce_max_ties_share_the_gradient():
    """Fluid's rule: every element equal to the maximum gets the whole
    gradient of the maximum (torch.amax would split it evenly)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [4], dtype="float64", stop_gradient=False)
        # A zero fc keeps the ties exact and gives SGD a parameter.
        zero = L.fc(x, 4, bias_attr=False, param_attr={
            "name": "w", "initializer": {"kind": "constant", "value": 0.0}})
        loss = L.mean(L.reduce_max(L.elementwise_add(x, zero), dim=1))
        fluid.optimizer.SGD(0.1).minimize(loss)
    xv = np.array([[1.0, 3.0, 3.0, 2.0], [0.0, 0.0, 0.0, -1.0]])
    (dx,) = _run(main, startup, {"x": xv}, ["x@GRAD"])
    np.testing.assert_array_equal(dx, [[0, 0.5, 0.5, 0], [0.5, 0.5, 0.5, 0]])


@pytest.mark.parametrize("bad,match", [(3, "out of range"),
                                       ([1, 1], "twice"),
                                       ("1", "expected None, an int")])
def test_reduce_bad_dim(bad, match):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = L.data("x", [3, 4])
        with pytest.raises((ValueError, TypeError), match=match):
            L.reduce_sum(x, dim=bad)


@pytest.mark.parametrize("axes,shape", [([1], [2, 1, 3, 1]),
                                        ([-1, 1], [2, 1, 3, 1]),
                                        ([], [2, 1, 3, 1]),
                                        ([2], [2, 1, 3, 1])])
def test_squeeze(axes, shape):
    def torch_fn(t):
        if not axes:
            return t.squeeze()
        for a in sorted((a % len(shape) for a in axes), reverse=True):
            t = t.squeeze(a)
        return t
    main, (out,) = _check(lambda x: L.squeeze(x, axes=axes), torch_fn,
                          [shape], seed=4)
    assert "squeeze2" in main.op_types()
    assert "squeeze2_grad" in main.op_types()


@pytest.mark.parametrize("axes", [[1], [-1], [1, 3], [2, -1]])
def test_unsqueeze(axes):
    def torch_fn(t):
        for a in axes:
            t = t.unsqueeze(a)
        return t
    main, (out,) = _check(lambda x: L.unsqueeze(x, axes=axes), torch_fn,
                          [[2, 3, 4]], seed=5)
    assert "unsqueeze2_grad" in main.op_types()


def test_squeeze_unsqueeze_shapes_and_errors():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = L.data("x", [1, 5, 1])
        assert L.squeeze(x, axes=[1, -1]).shape == (-1, 5)
        assert L.unsqueeze(x, axes=2).shape == (-1, 1, 1, 5, 1)
        with pytest.raises(ValueError, match="squeeze2.*axes.*4"):
            L.squeeze(x, axes=[4])
        with pytest.raises(ValueError, match="unsqueeze.*axes"):
            L.unsqueeze(x, axes=[])
        with pytest.raises(TypeError, match="expected a list of ints"):
            L.squeeze(x, axes="1")


@pytest.mark.parametrize("axis", [1, 2, -1])
def test_stack(axis):
    main, (out,) = _check(lambda a, b, c: L.stack([a, b, c], axis=axis),
                          lambda a, b, c: torch.stack([a, b, c], dim=axis),
                          [[2, 3, 4]] * 3, seed=6)
    assert "unstack" in main.op_types()  # stack's gradient


def test_stack_before_the_batch_dim():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        a = L.data("a", [3], dtype="float64")
        assert L.stack([a, a]).shape == (2, -1, 3)
        assert L.stack(a, axis=-1).shape == (-1, 3, 1)


@pytest.mark.parametrize("axis", [1, 2, -1])
def test_unstack(axis):
    main, outs = _check(lambda x: L.unstack(x, axis=axis),
                        lambda t: torch.unbind(t, dim=axis), [[2, 3, 3]],
                        seed=7)
    assert len(outs) == 3
    assert "stack" in main.op_types()  # unstack's gradient


@pytest.mark.parametrize("times", [[1, 2], [2, 3], [3, 1]])
def test_expand(times):
    _check(lambda x: L.expand(x, expand_times=times),
           lambda t: t.repeat(*times), [[2, 3]], seed=8)


@pytest.mark.parametrize("overwrite", [False, True])
def test_gather(overwrite):
    """Distinct indices: both modes give torch's gradient."""
    def build(x):
        index = L.assign(np.array([2, 0, 3], dtype="int64"))
        return L.gather(L.transpose(x, [1, 0, 2]), index,
                        overwrite=overwrite)

    def torch_fn(t):
        return t.permute(1, 0, 2)[torch.tensor([2, 0, 3])]
    _check(lambda x: L.transpose(build(x), [1, 0, 2]),
           lambda t: torch_fn(t).permute(1, 0, 2), [[2, 4, 3]], seed=9)


def test_gather_repeated_rows():
    """A repeated index: torch sums (overwrite=False gives the same); with
    overwrite=True the row gets the last occurrence's gradient."""
    for overwrite in (False, True):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            w = L.create_parameter([3, 2], "float64", name="w")
            c = L.data("c", [3, 2], dtype="float64", append_batch_size=False)
            i3 = L.data("i3", [3], dtype="int64", append_batch_size=False)
            out = L.gather(w, i3, overwrite=overwrite)
            fluid.optimizer.SGD(0.1).minimize(
                L.reduce_sum(L.elementwise_mul(out, c)))
        cv = np.arange(6, dtype="float64").reshape(3, 2)
        (dw,) = _run(main, startup, {"c": cv,
                                     "i3": np.array([2, 0, 2])}, ["w@GRAD"])
        tw = torch.zeros(3, 2, dtype=torch.float64, requires_grad=True)
        (tw[torch.tensor([2, 0, 2])] * torch.tensor(cv)).sum().backward()
        want = tw.grad.numpy().copy()
        if overwrite:
            want[2] = cv[2]
        np.testing.assert_array_equal(dw, want)


@pytest.mark.parametrize("axes,starts,ends", [
    ([1], [1], [3]), ([2], [-3], [2**31 - 1]), ([1, 2], [-10, 1], [-1, 100])])
def test_slice(axes, starts, ends):
    def torch_fn(t):
        idx = [builtins_slice(None)] * 3
        for a, s, e in zip(axes, starts, ends):
            dim = t.shape[a]
            s = min(max(s + dim if s < 0 else s, 0), dim)
            e = min(max(e + dim if e < 0 else e, 0), dim)
            idx[a] = builtins_slice(s, e)
        return t[tuple(idx)]
    _check(lambda x: L.slice(x, axes=axes, starts=starts, ends=ends),
           torch_fn, [[2, 4, 5]], seed=10)




def test_shape_runs_with_the_fed_batch():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3, 5])
        s = L.shape(x)
        assert s.shape == (3,) and s.dtype == "int32"
    (got,) = _run(main, startup, {"x": np.zeros((7, 3, 5), "float32")}, [s])
    np.testing.assert_array_equal(got, [7, 3, 5])
    assert got.dtype == np.int32


def test_data_movement_errors():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = L.data("x", [3, 4])
        with pytest.raises(ValueError, match="expand_times"):
            L.expand(x, expand_times=[2, 2])
        with pytest.raises(ValueError, match="slice.*empty"):
            L.slice(x, axes=[1], starts=[2], ends=[1])
        with pytest.raises(ValueError, match="unstack.*num"):
            L.unstack(x, axis=0)
        with pytest.raises(ValueError, match="stack.*axis"):
            L.stack([x, x], axis=5)
        with pytest.raises(ValueError, match="gather.*int32 or int64"):
            L.gather(x, x)


def test_stack_unstack_partial_gradients():
    """stack of a input with no gradient (its slot of the unstack that is
    stack's gradient is left blank) and unstack with outputs the loss does
    not use (their gradients zero-filled): x's gradient equals torch's."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3], dtype="float64", stop_gradient=False)
        c = L.data("c", [3], dtype="float64")
        w = L.create_parameter([3], "float64", name="w")
        s = L.stack([L.elementwise_mul(x, w), c], axis=1)      # [N, 2, 3]
        a, _, _ = L.unstack(L.transpose(s, [0, 2, 1]), axis=1)  # [N, 2]
        loss = L.elementwise_add(L.reduce_sum(L.square(a)), L.reduce_mean(s))
        fluid.optimizer.SGD(0.1).minimize(loss)
    rng = np.random.RandomState(11)
    xv, cv = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (2, 3))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    wv = np.array(scope.find_var("w").get_tensor())
    (dx,) = exe.run(main, feed={"x": xv, "c": cv}, fetch_list=["x@GRAD"],
                    scope=scope)
    tx = torch.tensor(xv, requires_grad=True)
    ts = torch.stack([tx * torch.tensor(wv), torch.tensor(cv)], dim=1)
    ta = ts.permute(0, 2, 1)[:, 0]
    ((ta ** 2).sum() + ts.mean()).backward()
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-12, atol=1e-14)
