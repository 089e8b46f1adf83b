"""Fluid 1.x's image layers: fluid.layers.conv2d_transpose, image_resize,
resize_bilinear and resize_nearest.

    x = fluid.layers.data("x", [8, 16, 16])                     # [-1, 8, 16, 16]
    up = fluid.layers.conv2d_transpose(x, num_filters=4, filter_size=4,
                                       stride=2, padding=1)    # [-1, 4, 32, 32]
    big = fluid.layers.resize_bilinear(x, out_shape=[40, 40])  # [-1, 8, 40, 40]

Each builds the C++ layer of the same name (src/builder/image_layers.cc)
with Fluid 1.x's arguments and defaults. Images are NCHW: data_format
"NHWC" raises NotImplementedError (transpose to NCHW first).
"""
from .layers import _attr, _layer, _name, _named, _size

__all__ = ["conv2d_transpose", "image_resize", "image_resize_short",
           "resize_bilinear", "resize_nearest"]


def _padding(padding):
    """Fluid's padding of conv2d_transpose: an int, [h, w] or "VALID"."""
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return [0, 0]
        if padding.upper() == "SAME":
            raise NotImplementedError(
                "conv2d_transpose(padding='SAME'): not supported here; give "
                "the padding as ints and the wanted size as output_size")
        raise ValueError(f"conv2d_transpose(padding={padding!r}): expected "
                         "an int, [h, w] or 'VALID'")
    return _size(padding, "conv2d_transpose", "padding")


def conv2d_transpose(input, num_filters, output_size=None, filter_size=None,
                     padding=0, stride=1, dilation=1, groups=None,
                     param_attr=None, bias_attr=None, use_cudnn=True,
                     act=None, name=None, data_format="NCHW"):
    """Transposed 2-D convolution (op `conv2d_transpose`), plus a bias and
    act: each input pixel spreads its filter over a window of the output,
    windows `stride` apart, as the gradient of conv2d with its input does.

    input: NCHW [N, C, H, W]; filter conv2d_transpose_N.w_0 [C,
    num_filters / groups, kh, kw] (groups, None: 1, must divide C and
    num_filters); output [N, num_filters, H_out, W_out] with H_out =
    (H - 1) * stride - 2 * padding + dilation * (kh - 1) + 1, or
    output_size when given (from H_out up to H_out + stride - 1). Without
    filter_size, output_size sets the filter: kh = (output_size - (H - 1) *
    stride + 2 * padding - 1) // dilation + 1. output_size, filter_size,
    padding ("VALID" is 0), stride and dilation: an int or [h, w].
    use_cudnn is accepted and ignored; name names the parameters name.w_0
    and name.b_0. data_format: "NCHW" only.

        >>> x = fluid.layers.data("x", [8, 16, 16])
        >>> y = fluid.layers.conv2d_transpose(x, num_filters=4,
        ...                                   filter_size=4, stride=2,
        ...                                   padding=1)  # [-1, 4, 32, 32]
    """
    layer = "conv2d_transpose"
    if groups is None:
        groups = 1
    if isinstance(groups, bool) or not isinstance(groups, int):
        raise TypeError(f"{layer}(groups={groups!r}): expected an int")
    if output_size is None and filter_size is None:
        raise ValueError(f"{layer}: output_size must be set when "
                         "filter_size is None")
    if hasattr(output_size, "name"):
        raise TypeError(f"{layer}(output_size=Variable): give the size as "
                        "ints [h, w]")
    return _layer(
        layer, input=_name(input, layer), num_filters=num_filters,
        output_size=None if output_size is None else _size(
            output_size, layer, "output_size"),
        filter_size=None if filter_size is None else _size(
            filter_size, layer, "filter_size"),
        padding=_padding(padding), stride=_size(stride, layer, "stride"),
        dilation=_size(dilation, layer, "dilation"), groups=groups,
        param_attr=_named(_attr(param_attr, layer, "param_attr"), name, "w"),
        bias_attr=_named(_attr(bias_attr, layer, "bias_attr"), name, "b"),
        use_cudnn=use_cudnn, act=act, name=name, data_format=data_format)


def _resize_args(layer, input, out_shape, scale, actual_shape,
                 align_corners, align_mode):
    """The checked arguments of a resize layer, as the C++ layer takes them.
    An out_shape Variable (int32 [2]) sizes the output at run time, as
    actual_shape does."""
    if not isinstance(align_corners, bool):
        raise TypeError(f"{layer}(align_corners={align_corners!r}): "
                        "expected a bool")
    if align_mode not in (0, 1) or isinstance(align_mode, bool):
        raise ValueError(f"{layer}(align_mode={align_mode!r}): expected 0 "
                         "or 1")
    if out_shape is None and scale is None:
        raise ValueError(f"{layer}: one of out_shape and scale must not be "
                         "None")
    shape = None
    if hasattr(out_shape, "name"):
        if actual_shape is None:
            actual_shape = out_shape
    elif out_shape is not None:
        if not isinstance(out_shape, (list, tuple)) or len(out_shape) != 2:
            raise ValueError(f"{layer}(out_shape={out_shape!r}): expected "
                             "[out_h, out_w] or an int32 Variable [2]")
        if any(hasattr(v, "name") for v in out_shape):
            raise TypeError(f"{layer}(out_shape=[...Variable...]): give ints, "
                            "or the whole size as one int32 Variable [2]")
        shape = _size(list(out_shape), layer, "out_shape")
    if scale is not None and shape is None:
        if hasattr(scale, "name"):
            raise TypeError(f"{layer}(scale=Variable): give scale as a "
                            "float, or the size as out_shape")
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) \
                or scale <= 0:
            raise ValueError(f"{layer}(scale={scale!r}): expected a number "
                             "greater than zero")
    return dict(input=_name(input, layer), out_shape=shape,
                scale=None if shape is not None or scale is None
                else float(scale),
                actual_shape=None if actual_shape is None
                else _name(actual_shape, layer, "actual_shape"),
                align_corners=align_corners)


def image_resize(input, out_shape=None, scale=None, name=None,
                 resample="BILINEAR", actual_shape=None, align_corners=True,
                 align_mode=1, data_format="NCHW"):
    """Resizes each plane of NCHW `input` [N, C, H, W] (op bilinear_interp
    or nearest_interp).

    resample: "BILINEAR" or "NEAREST" ("TRILINEAR", for 5-D volumes, raises
    NotImplementedError). The size: out_shape [out_h, out_w] (or an int32
    Variable [2] read at run time), else scale (out = int(in * scale));
    actual_shape, an int32 Variable [2], overrides both at run time.
    align_corners (default True): the corner pixels of input and output
    align, ratio (in - 1) / (out - 1); else ratio in / out, and bilinear
    samples at ratio * k with align_mode 1 (the default) or at half-pixel
    centres ratio * (k + 0.5) - 0.5 with align_mode 0 (PyTorch's
    align_corners=False). name: prefix of the output's name. data_format:
    "NCHW" only.

        >>> x = fluid.layers.data("x", [3, 6, 8])
        >>> y = fluid.layers.image_resize(x, out_shape=[12, 16])  # [-1, 3, 12, 16]
    """
    if resample not in ("BILINEAR", "NEAREST", "TRILINEAR"):
        raise ValueError(f"image_resize(resample={resample!r}): expected "
                         "'BILINEAR' or 'NEAREST'")
    args = _resize_args("image_resize", input, out_shape, scale,
                        actual_shape, align_corners, align_mode)
    return _layer("image_resize", name=name, resample=resample,
                  align_mode=align_mode, data_format=data_format, **args)


def resize_bilinear(input, out_shape=None, scale=None, name=None,
                    actual_shape=None, align_corners=True, align_mode=1,
                    data_format="NCHW"):
    """image_resize with resample="BILINEAR" (op bilinear_interp): each
    output pixel blends the four input pixels around its source position;
    the arguments as image_resize's.

        >>> x = fluid.layers.data("x", [3, 6, 8])
        >>> y = fluid.layers.resize_bilinear(x, scale=2.0)  # [-1, 3, 12, 16]
    """
    args = _resize_args("resize_bilinear", input, out_shape, scale,
                        actual_shape, align_corners, align_mode)
    return _layer("resize_bilinear", name=name, align_mode=align_mode,
                  data_format=data_format, **args)


def resize_nearest(input, out_shape=None, scale=None, name=None,
                   actual_shape=None, align_corners=True, data_format="NCHW"):
    """image_resize with resample="NEAREST" (op nearest_interp): each
    output pixel copies the input pixel at its source position, rounded
    with align_corners (the default), floored without (PyTorch's
    mode="nearest"); the other arguments as image_resize's.

        >>> x = fluid.layers.data("x", [3, 6, 8])
        >>> y = fluid.layers.resize_nearest(x, out_shape=[3, 4])  # [-1, 3, 3, 4]
    """
    args = _resize_args("resize_nearest", input, out_shape, scale,
                        actual_shape, align_corners, 1)
    return _layer("resize_nearest", name=name, data_format=data_format,
                  **args)


def image_resize_short(input, out_short_len, resample="BILINEAR"):
    """Resizes NCHW `input` so that its shorter side is out_short_len and
    the longer keeps the aspect ratio (rounded to nearest): image_resize
    with that out_shape. The input's height and width must be known.

        >>> x = fluid.layers.data("x", [3, 20, 30])
        >>> y = fluid.layers.image_resize_short(x, 10)   # [-1, 3, 10, 15]
    """
    if resample not in ("BILINEAR", "NEAREST", "TRILINEAR"):
        raise ValueError(f"image_resize_short(resample={resample!r}): "
                         "expected 'BILINEAR' or 'NEAREST'")
    return _layer("image_resize_short",
                  input=_name(input, "image_resize_short"),
                  out_short_len=out_short_len, resample=resample)
