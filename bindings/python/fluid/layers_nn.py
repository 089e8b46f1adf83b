"""Fluid 1.x's similarity, normalisation, activation and loss layers
(fluid.layers.cos_sim, l2_normalize, prelu, smooth_l1 and group_norm: the
C++ layers of src/builder/nn_layers.cc over the ops cos_sim, norm, prelu,
smooth_l1_loss and group_norm), its creation layers (zeros, ones,
zeros_like, ones_like, uniform_random, gaussian_random and their
_batch_size_like forms, range, linspace, eye, diag) and the finiteness
tests has_inf, has_nan and isfinite (src/builder/creation_layers.cc).

    x = fluid.layers.data("x", [3, 8, 8])                 # [-1, 3, 8, 8]
    h = fluid.layers.group_norm(x, groups=3, act="relu")
    h = fluid.layers.prelu(h, mode="channel")
    e = fluid.layers.l2_normalize(fluid.layers.fc(h, 16), axis=1)
"""
from .layers import _attr, _dtype_name, _layer, _name, _named

__all__ = ["cos_sim", "diag", "eye", "gaussian_random",
           "gaussian_random_batch_size_like", "group_norm", "has_inf",
           "has_nan", "isfinite", "l2_normalize", "linspace", "ones",
           "ones_like", "prelu", "range", "smooth_l1", "uniform_random",
           "uniform_random_batch_size_like", "zeros", "zeros_like"]

# Random layers and seeds: a nonzero seed draws the same values on every
# rank and in every run. Fluid draws afresh in each run for seed=0 unless
# the program's random_seed is set; here seed=0 derives the seed from the
# output variable's name, as this product's random ops (and initializers)
# do, so the values are again the same on every rank and in every run
# (data-parallel ranks must agree), and differ between layers. For noise
# that changes from step to step, use dropout (which counts the steps).


def cos_sim(X, Y):
    """The cosine similarity X[r] . Y[r] / (|X[r]| |Y[r]|) of each row of
    X [N, ...] with the same row of Y (X's shape) or with Y's one row
    (Y [1, ...], broadcast). Returns [N, 1]. As in Fluid there is no
    epsilon: a row of zeros gives NaN.

        >>> q = fluid.layers.data("q", [32])
        >>> d = fluid.layers.data("d", [32])
        >>> sim = fluid.layers.cos_sim(q, d)                # [-1, 1]
    """
    return _layer("cos_sim", X=_name(X, "cos_sim", "X"),
                  Y=_name(Y, "cos_sim", "Y"))


def l2_normalize(x, axis, epsilon=1e-12, name=None):
    """x / sqrt(sum of x^2 along `axis` + epsilon) (Fluid's norm op). axis
    may be negative (from the end); a rank-1 x is normalised along its one
    axis whatever `axis` says, as in Fluid. The output has x's shape.

        >>> emb = fluid.layers.fc(fluid.layers.data("x", [64]), 16)
        >>> emb = fluid.layers.l2_normalize(emb, axis=1)    # [-1, 16]
    """
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"l2_normalize(axis={axis!r}): expected an int")
    return _layer("l2_normalize", x=_name(x, "l2_normalize", "x"), axis=axis,
                  epsilon=float(epsilon), name=name)


def prelu(x, mode, param_attr=None, name=None):
    """x where x > 0, else alpha * x, alpha a learned parameter (0.25 at
    first, name.w_0 or prelu_N.w_0). mode "all": one alpha [1]; "channel":
    one per channel (x's dim 1), alpha [1, C, 1, 1] for NCHW x; "element":
    one per element of an example, alpha [1] + x.shape[1:]. The output has
    x's shape.

        >>> x = fluid.layers.data("x", [3, 8, 8])
        >>> y = fluid.layers.prelu(x, mode="channel")  # alpha [1, 3, 1, 1]
    """
    attr = _named(_attr(param_attr, "prelu", "param_attr"), name, "w")
    return _layer("prelu", x=_name(x, "prelu", "x"), mode=mode,
                  param_attr=attr, name=name)


def smooth_l1(x, y, inside_weight=None, outside_weight=None, sigma=None):
    """Per row of x [N, ...]: the sum over the row of outside_weight *
    SmoothL1(inside_weight * (x - y)), with SmoothL1(d) = 0.5 * (sigma *
    d)^2 where |d| < 1 / sigma^2, else |d| - 0.5 / sigma^2 (sigma None:
    1.0). y and the weights have x's shape; the weights are given
    together or not at all, as in Fluid. Returns [N, 1].

        >>> pred = fluid.layers.fc(fluid.layers.data("x", [8]), 4)
        >>> target = fluid.layers.data("t", [4])
        >>> loss = fluid.layers.mean(fluid.layers.smooth_l1(pred, target))
    """
    if (inside_weight is None) != (outside_weight is None):
        raise ValueError("smooth_l1: inside_weight and outside_weight are "
                         "given together or not at all")
    weights = {arg: None if w is None else _name(w, "smooth_l1", arg)
               for arg, w in (("inside_weight", inside_weight),
                              ("outside_weight", outside_weight))}
    return _layer("smooth_l1", x=_name(x, "smooth_l1", "x"),
                  y=_name(y, "smooth_l1", "y"),
                  sigma=1.0 if sigma is None else float(sigma), **weights)


def group_norm(input, groups, epsilon=1e-05, param_attr=None,
               bias_attr=None, act=None, data_layout='NCHW', name=None):
    """Group normalisation: the C channels of each example split into
    `groups` groups (groups divides C), each group normalised to zero mean
    and unit (biased) variance over its channels and positions, then times
    a [C] scale (param_attr; 1 at first) plus a [C] bias (bias_attr; 0 at
    first), then act. param_attr=False or bias_attr=False goes without
    that parameter. data_layout: "NCHW" (channels at dim 1) or "NHWC"
    (channels last). The output has input's shape. Under mixed precision
    the op runs in float32 (it is on the black list), so the scale, bias
    and statistics stay float32.

        >>> x = fluid.layers.data("x", [32, 16, 16])        # NCHW
        >>> y = fluid.layers.group_norm(x, groups=8, act="relu")
    """
    if data_layout not in ("NCHW", "NHWC"):
        raise ValueError(f"group_norm(data_layout={data_layout!r}): "
                         "expected 'NCHW' or 'NHWC'")
    if isinstance(groups, bool) or not isinstance(groups, int):
        raise TypeError(f"group_norm(groups={groups!r}): expected an int")
    layer = "group_norm"
    # False: no Scale, as Fluid goes without it (an attr for the scale
    # otherwise).
    scale = False if param_attr is False else _named(
        _attr(param_attr, layer, "param_attr"), name, "w")
    return _layer(layer, input=_name(input, layer), groups=groups,
                  epsilon=float(epsilon), param_attr=scale,
                  bias_attr=_named(_attr(bias_attr, layer, "bias_attr"),
                                   name, "b"),
                  act=act, data_layout=data_layout, name=name)



def _number(value, layer, arg, kinds=(int, float)):
    """A Python number argument; Variables are not supported here."""
    if isinstance(value, bool) or not isinstance(value, kinds):
        what = "a Variable" if hasattr(value, "name") else repr(value)
        raise TypeError(f"{layer}({arg}={what}): expected a Python number "
                        "(Variables for the bounds and counts are not "
                        "supported here; compute them in Python)")
    return value


def _shape_list(shape, layer):
    if not isinstance(shape, (list, tuple)) or any(
            isinstance(d, bool) or not isinstance(d, int) for d in shape):
        raise TypeError(f"{layer}(shape={shape!r}): expected a list or "
                        "tuple of ints")
    return list(shape)


def zeros(shape, dtype, force_cpu=False):
    """A constant of `shape` and `dtype` filled with 0 (op fill_constant).
    force_cpu is accepted and has no effect (a var lives where the
    executor runs).

        >>> z = fluid.layers.zeros([3, 2], "float32")      # [3, 2]
    """
    return _layer("zeros", shape=_shape_list(shape, "zeros"),
                  dtype=_dtype_name(dtype, "zeros"), force_cpu=force_cpu)


def ones(shape, dtype, force_cpu=False):
    """A constant of `shape` and `dtype` filled with 1 (op fill_constant).
    force_cpu is accepted and has no effect.

        >>> o = fluid.layers.ones([2, 4], "int64")         # [2, 4]
    """
    return _layer("ones", shape=_shape_list(shape, "ones"),
                  dtype=_dtype_name(dtype, "ones"), force_cpu=force_cpu)


def zeros_like(x, out=None):
    """x's shape and dtype filled with 0 (op fill_any_like); written to
    `out` (an existing Variable) when given. No gradient flows to it.

        >>> x = fluid.layers.data("x", [3])
        >>> z = fluid.layers.zeros_like(x)                  # [-1, 3]
    """
    return _layer("zeros_like", x=_name(x, "zeros_like", "x"),
                  out=None if out is None else _name(out, "zeros_like",
                                                     "out"))


def ones_like(x, out=None):
    """x's shape and dtype filled with 1 (op fill_any_like); written to
    `out` (an existing Variable) when given. No gradient flows to it.

        >>> x = fluid.layers.data("x", [3])
        >>> o = fluid.layers.ones_like(x)                   # [-1, 3]
    """
    return _layer("ones_like", x=_name(x, "ones_like", "x"),
                  out=None if out is None else _name(out, "ones_like",
                                                     "out"))


def uniform_random(shape, dtype='float32', min=-1.0, max=1.0, seed=0):
    """A float32 or float64 tensor of `shape` drawn uniformly from [min,
    max) (op uniform_random). seed: see the note at the top of this module
    (0: derived from the output's name; the same values on every rank and
    run).

        >>> noise = fluid.layers.uniform_random([4, 8], min=-0.1, max=0.1)
    """
    return _layer("uniform_random",
                  shape=_shape_list(shape, "uniform_random"),
                  dtype=_dtype_name(dtype, "uniform_random"),
                  min=float(min), max=float(max), seed=int(seed))


def gaussian_random(shape, mean=0.0, std=1.0, seed=0, dtype='float32'):
    """A float32 or float64 tensor of `shape` drawn from N(mean, std^2) (op
    gaussian_random). seed: see the note at the top of this module.

        >>> w = fluid.layers.gaussian_random([16, 16], std=0.02, seed=1)
    """
    return _layer("gaussian_random",
                  shape=_shape_list(shape, "gaussian_random"),
                  mean=float(mean), std=float(std), seed=int(seed),
                  dtype=_dtype_name(dtype, "gaussian_random"))


def uniform_random_batch_size_like(input, shape, dtype='float32',
                                   input_dim_idx=0, output_dim_idx=0,
                                   min=-1.0, max=1.0, seed=0):
    """uniform_random of `shape`, its dim output_dim_idx set at run time to
    input's dim input_dim_idx (the batch size). seed: see the note at the
    top of this module.

        >>> x = fluid.layers.data("x", [8])                  # [-1, 8]
        >>> u = fluid.layers.uniform_random_batch_size_like(x, [-1, 4])
    """
    layer = "uniform_random_batch_size_like"
    return _layer(layer, input=_name(input, layer),
                  shape=_shape_list(shape, layer),
                  dtype=_dtype_name(dtype, layer),
                  input_dim_idx=input_dim_idx, output_dim_idx=output_dim_idx,
                  min=float(min), max=float(max), seed=int(seed))


def gaussian_random_batch_size_like(input, shape, input_dim_idx=0,
                                    output_dim_idx=0, mean=0.0, std=1.0,
                                    seed=0, dtype='float32'):
    """gaussian_random of `shape`, its dim output_dim_idx set at run time to
    input's dim input_dim_idx (the batch size). seed: see the note at the
    top of this module.

        >>> x = fluid.layers.data("x", [8])                  # [-1, 8]
        >>> g = fluid.layers.gaussian_random_batch_size_like(x, [-1, 4])
    """
    layer = "gaussian_random_batch_size_like"
    return _layer(layer, input=_name(input, layer),
                  shape=_shape_list(shape, layer),
                  input_dim_idx=input_dim_idx, output_dim_idx=output_dim_idx,
                  mean=float(mean), std=float(std), seed=int(seed),
                  dtype=_dtype_name(dtype, layer))


def range(start, end, step, dtype):
    """The 1-D tensor [start, start + step, ...] of the values short of end
    (op range), of dtype float32, float64, int32 or int64. start, end and
    step are Python numbers here (Fluid also takes [1] Variables);
    int dtypes need whole numbers.

        >>> r = fluid.layers.range(0, 10, 2, "int64")       # [0, 2, 4, 6, 8]
    """
    return _layer("range", start=float(_number(start, "range", "start")),
                  end=float(_number(end, "range", "end")),
                  step=float(_number(step, "range", "step")),
                  dtype=_dtype_name(dtype, "range"))


def linspace(start, stop, num, dtype):
    """`num` values evenly spaced from start to stop, both included (num 1:
    [start]), float32 or float64 (op linspace). start, stop and num are
    Python numbers here (Fluid also takes [1] Variables).

        >>> v = fluid.layers.linspace(0, 10, 5, "float32")  # 0, 2.5, ..., 10
    """
    return _layer("linspace", start=float(_number(start, "linspace",
                                                   "start")),
                  stop=float(_number(stop, "linspace", "stop")),
                  num=_number(num, "linspace", "num", (int,)),
                  dtype=_dtype_name(dtype, "linspace"))


def eye(num_rows, num_columns=None, batch_shape=None, dtype='float32'):
    """batch_shape copies of the [num_rows, num_columns] identity (num_columns
    None: num_rows), of shape batch_shape + [num_rows, num_columns] (op
    eye); dtype float32, float64, int32 or int64.

        >>> i = fluid.layers.eye(3, dtype="int32")         # [3, 3]
        >>> b = fluid.layers.eye(2, batch_shape=[4])       # [4, 2, 2]
    """
    num_columns = num_rows if num_columns is None else num_columns
    return _layer("eye", num_rows=_number(num_rows, "eye", "num_rows", (int,)),
                  num_columns=_number(num_columns, "eye", "num_columns",
                                      (int,)),
                  batch_shape=_shape_list(batch_shape or [], "eye"),
                  dtype=_dtype_name(dtype, "eye"))


def diag(diagonal):
    """The [n, n] matrix with `diagonal` [n] on its main diagonal and 0
    elsewhere (op diag). diagonal: a Variable or a 1-D NumPy array
    (float32, int32 or int64; made a constant with assign).

        >>> import numpy as np
        >>> d = fluid.layers.diag(np.arange(3, dtype="float32"))  # [3, 3]
    """
    if not (hasattr(diagonal, "name") or isinstance(diagonal, str)):
        from .layers import assign
        diagonal = assign(diagonal)
    return _layer("diag", diagonal=_name(diagonal, "diag", "diagonal"))


def has_inf(x):
    """A bool [1]: whether any element of the float tensor x is an infinity
    (op isinf).

        >>> bad = fluid.layers.has_inf(fluid.layers.data("x", [4]))
    """
    return _layer("has_inf", x=_name(x, "has_inf", "x"))


def has_nan(x):
    """A bool [1]: whether any element of the float tensor x is a NaN (op
    isnan).

        >>> bad = fluid.layers.has_nan(fluid.layers.data("x", [4]))
    """
    return _layer("has_nan", x=_name(x, "has_nan", "x"))


def isfinite(x):
    """A bool [1]: whether every element of the float tensor x is finite,
    neither an infinity nor a NaN (op isfinite).

        >>> ok = fluid.layers.isfinite(fluid.layers.data("x", [4]))
    """
    return _layer("isfinite", x=_name(x, "isfinite", "x"))
