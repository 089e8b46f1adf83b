"""fluid.layers.conv2d_transpose, image_resize, resize_bilinear,
resize_nearest and image_resize_short through fluid.Executor, compared with
PyTorch 1.13 on the same inputs (float64): forward values and the gradient
that reaches the input (and the filter and bias).

conv2d_transpose is torch.nn.functional.conv_transpose2d, its output_size
torch's output_padding = output_size - the smallest output. Of the resize
modes, bilinear with align_corners=True is F.interpolate(mode="bilinear",
align_corners=True); bilinear with align_corners=False and align_mode=0
(half-pixel centres) is F.interpolate(mode="bilinear", align_corners=False);
nearest with align_corners=False is F.interpolate(mode="nearest"). Fluid's
other two (bilinear, align_corners=False, align_mode=1: sampling at
in / out * k; nearest with align_corners=True: rounding (in - 1) /
(out - 1) * k) have no PyTorch mode: they are checked against a NumPy
loop written from Fluid's definition, their gradient against that loop's
transpose.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import fluid
from test_tensor_layers import _check, _input, _run

L = fluid.layers


def _transpose_case(n, c, h, w, m, k, stride, padding, dilation, groups,
                    extra=(0, 0), sized_filter=True, seed=0):
    """conv2d_transpose of x [n, c, h, w] into m channels against torch,
    forward and the gradients of x, the filter and the bias."""
    rng = np.random.RandomState(seed)
    smallest = [(d - 1) * stride[i] - 2 * padding[i] +
                dilation[i] * (k[i] - 1) + 1 for i, d in enumerate((h, w))]
    size = [smallest[0] + extra[0], smallest[1] + extra[1]]
    ask_size = size if (extra != (0, 0) or not sized_filter) else None
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [c, h, w], dtype="float64", stop_gradient=False)
        y = L.conv2d_transpose(
            x, m, output_size=ask_size,
            filter_size=list(k) if sized_filter else None,
            padding=list(padding), stride=list(stride),
            dilation=list(dilation), groups=groups, param_attr="w",
            bias_attr="b")
        cw = L.data("c", [m] + size, dtype="float64")
        fluid.optimizer.SGD(0.1).minimize(L.mean(L.elementwise_mul(y, cw)))
    assert tuple(y.shape) == (-1, m, size[0], size[1])
    xv = rng.uniform(-1, 1, (n, c, h, w))
    wv = rng.uniform(-1, 1, (c, m // groups, k[0], k[1]))
    bv = rng.uniform(-1, 1, m)
    cv = rng.uniform(-1, 1, (n, m, size[0], size[1]))
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    scope.set("w", wv)
    scope.set("b", bv)
    got = exe.run(main, feed={"x": xv, "c": cv}, scope=scope,
                  fetch_list=[y, "x@GRAD", "w@GRAD", "b@GRAD"])
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (xv, wv, bv))
    ty = F.conv_transpose2d(tx, tw, tb, stride=stride, padding=padding,
                            output_padding=tuple(extra), groups=groups,
                            dilation=dilation)
    (ty * torch.tensor(cv)).mean().backward()
    np.testing.assert_allclose(got[0], ty.detach().numpy(), rtol=1e-12,
                               atol=1e-13)
    for g, t, what in zip(got[1:], (tx, tw, tb), ("x", "filter", "bias")):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10,
                                   atol=1e-14, err_msg=what)


@pytest.mark.parametrize("args", [
    # n, c, h, w, m, k, stride, padding, dilation, groups, extra
    (2, 3, 4, 5, 2, (3, 3), (1, 1), (0, 0), (1, 1), 1, (0, 0)),
    (2, 3, 4, 4, 4, (4, 4), (2, 2), (1, 1), (1, 1), 1, (0, 0)),
    (1, 2, 3, 5, 3, (3, 2), (3, 2), (1, 0), (1, 1), 1, (2, 1)),
    (2, 2, 4, 3, 2, (3, 3), (2, 1), (1, 1), (2, 2), 1, (1, 0)),
    (2, 4, 3, 4, 6, (3, 3), (2, 2), (0, 1), (1, 1), 2, (1, 1)),
    (1, 4, 4, 4, 4, (3, 3), (1, 1), (1, 1), (1, 1), 4, (0, 0)),
    (2, 3, 3, 3, 2, (1, 1), (2, 2), (0, 0), (1, 1), 1, (1, 0)),
])
def test_conv2d_transpose(args):
    _transpose_case(*args)


def test_conv2d_transpose_filter_from_output_size():
    """Without filter_size, Fluid sizes the filter so that the smallest
    output is output_size: 5 -> 11 at stride 2, padding 1 is a 3x3 kernel
    (and at dilation 2, the 2x2 kernel whose reach is 3)."""
    _transpose_case(2, 2, 5, 5, 3, (3, 3), (2, 2), (1, 1), (1, 1), 1,
                    sized_filter=False)
    _transpose_case(1, 2, 4, 5, 2, (2, 3), (2, 1), (0, 1), (2, 1), 1,
                    sized_filter=False)



@pytest.mark.parametrize("size", [(8, 10), (3, 4), (5, 7)])
def test_resize_bilinear_align_corners(size):
    _check(lambda x: L.resize_bilinear(x, out_shape=list(size)),
           lambda t: F.interpolate(t.reshape(2, 3, 4, 5), size=size,
                                   mode="bilinear", align_corners=True),
           [[2, 3, 4, 5]])


@pytest.mark.parametrize("size", [(8, 10), (3, 4), (9, 3)])
def test_resize_bilinear_half_pixel(size):
    _check(lambda x: L.image_resize(x, out_shape=list(size),
                                    align_corners=False, align_mode=0),
           lambda t: F.interpolate(t.reshape(2, 3, 4, 5), size=size,
                                   mode="bilinear", align_corners=False),
           [[2, 3, 4, 5]], seed=1)


@pytest.mark.parametrize("size", [(8, 10), (2, 3), (6, 15)])
def test_resize_nearest_floor(size):
    _check(lambda x: L.resize_nearest(x, out_shape=list(size),
                                      align_corners=False),
           lambda t: F.interpolate(t.reshape(2, 3, 4, 5), size=size,
                                   mode="nearest"),
           [[2, 3, 4, 5]], seed=2)


def test_resize_by_scale():
    _check(lambda x: L.resize_bilinear(x, scale=2.0),
           lambda t: F.interpolate(t.reshape(2, 2, 3, 4), size=(6, 8),
                                   mode="bilinear", align_corners=True),
           [[2, 2, 3, 4]], seed=3)


def test_image_resize_short():
    """The shorter side (height 4) to 8, the width 6 -> 12."""
    main, (out,) = _check(
        lambda x: L.image_resize_short(x, 8, resample="NEAREST"),
        lambda t: t.reshape(1, 2, 4, 6).repeat_interleave(
            2, dim=2).repeat_interleave(2, dim=3), [[1, 2, 4, 6]])
    assert tuple(out.shape) == (-1, 2, 8, 12)


def _fluid_matrix(in_size, out_size, mode, align_corners, align_mode):
    """The [out, in] matrix of Fluid's resize along one axis, from its
    definition."""
    a = np.zeros((out_size, in_size))
    if out_size > 1:
        ratio = ((in_size - 1) / (out_size - 1) if align_corners
                 else in_size / out_size)
    else:
        ratio = 0.0
    for k in range(out_size):
        if mode == "nearest":
            r = np.float32(ratio) * np.float32(k)
            i = int(r + np.float32(0.5)) if align_corners else int(r)
            a[k, min(i, in_size - 1)] = 1
            continue
        half = not align_corners and align_mode == 0
        src = max(ratio * (k + 0.5) - 0.5 if half else ratio * k, 0.0)
        lo = min(int(src), in_size - 1)
        hi = min(lo + 1, in_size - 1)
        lam = src - lo
        a[k, lo] += 1 - lam
        a[k, hi] += lam
    return a


@pytest.mark.parametrize("mode,align_corners,align_mode,size", [
    ("bilinear", False, 1, (7, 3)),
    ("bilinear", False, 1, (8, 11)),
    ("nearest", True, 1, (7, 9)),
    ("nearest", True, 1, (2, 3)),
])
def test_resize_modes_without_torch_equivalent(mode, align_corners,
                                               align_mode, size):
    """Y = A_h X A_w^T per plane; dX = A_h^T dY A_w."""
    rng = np.random.RandomState(4)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x, value = _input("x", [2, 3, 4, 5])
        y = L.image_resize(x, out_shape=list(size), resample=mode.upper(),
                           align_corners=align_corners,
                           align_mode=align_mode)
        c = L.data("c", [3] + list(size), dtype="float64")
        fluid.optimizer.SGD(0.1).minimize(L.reduce_sum(
            L.elementwise_mul(y, c)))
    xv = rng.uniform(-1, 1, (2, 60))
    cv = rng.uniform(-1, 1, (2, 3) + size)
    got = _run(main, startup, {"x": xv, "c": cv}, [y, x.name + "@GRAD"])
    ah = _fluid_matrix(4, size[0], mode, align_corners, align_mode)
    aw = _fluid_matrix(5, size[1], mode, align_corners, align_mode)
    np.testing.assert_allclose(got[0], ah @ value(xv) @ aw.T, rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(got[1], ah.T @ cv @ aw, rtol=1e-12,
                               atol=1e-14)


def test_actual_shape_sizes_the_output_at_run_time():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [2, 4, 5], dtype="float64")
        size = L.data("size", [2], dtype="int32", append_batch_size=False)
        y = L.resize_bilinear(x, out_shape=[8, 10], actual_shape=size)
        z = L.resize_nearest(x, out_shape=size, align_corners=False)
    xv = np.random.RandomState(5).uniform(-1, 1, (3, 2, 4, 5))
    got = _run(main, startup, {"x": xv, "size": np.array([6, 7], "int32")},
               [y, z])
    t = torch.tensor(xv)
    np.testing.assert_allclose(
        got[0], F.interpolate(t, size=(6, 7), mode="bilinear",
                              align_corners=True).numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        got[1], F.interpolate(t, size=(6, 7), mode="nearest").numpy())


def test_bad_arguments_are_refused():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [2, 4, 5])
        with pytest.raises(ValueError, match="output_size must be set"):
            L.conv2d_transpose(x, 3)
        with pytest.raises(NotImplementedError, match="transpose"):
            L.conv2d_transpose(x, 3, filter_size=3, data_format="NHWC")
        with pytest.raises(NotImplementedError, match="SAME"):
            L.conv2d_transpose(x, 3, filter_size=3, padding="SAME")
        with pytest.raises(ValueError, match="groups"):
            L.conv2d_transpose(x, 3, filter_size=3, groups=2)
        with pytest.raises(ValueError, match="output_size.*allowed 9 to 10"):
            L.conv2d_transpose(x, 3, output_size=[11, 11], filter_size=3,
                               stride=2, padding=0)
        with pytest.raises(ValueError, match="one of out_shape and scale"):
            L.image_resize(x)
        with pytest.raises(ValueError, match="resample"):
            L.image_resize(x, out_shape=[3, 3], resample="BICUBIC")
        with pytest.raises(NotImplementedError, match="TRILINEAR"):
            L.image_resize(x, out_shape=[3, 3], resample="TRILINEAR")
        with pytest.raises(ValueError, match="align_mode"):
            L.resize_bilinear(x, out_shape=[3, 3], align_mode=2)
        with pytest.raises(TypeError, match="align_corners"):
            L.resize_bilinear(x, out_shape=[3, 3], align_corners=1)
        with pytest.raises(ValueError, match="scale"):
            L.resize_nearest(x, scale=-1.0)
        with pytest.raises(NotImplementedError, match="NHWC"):
            L.resize_nearest(x, out_shape=[3, 3], data_format="NHWC")
