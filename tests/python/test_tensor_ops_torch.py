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
