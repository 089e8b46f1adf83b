"""Fluid 1.x's tensor layers over reductions and data movement:
fluid.layers.reduce_sum, reduce_mean, reduce_max, reduce_min,
reduce_prod, squeeze, unsqueeze, stack, unstack, expand, gather, slice and
shape.

    x = fluid.layers.data("x", [3, 4])              # [-1, 3, 4]
    row_sums = fluid.layers.reduce_sum(x, dim=-1)   # [-1, 3]
    total = fluid.layers.reduce_mean(x)             # [1]

Each builds the C++ layer of the same name (src/builder/tensor_ops_layers.cc)
with Fluid 1.x's arguments and defaults.
"""
from .layers import _layer, _name, _var_list

__all__ = ["expand", "gather", "reduce_max", "reduce_mean", "reduce_min",
           "reduce_prod", "reduce_sum", "shape", "slice", "squeeze", "stack",
           "unsqueeze", "unstack"]


def _dims(dim, layer):
    """Fluid's `dim`: None (every dim), an int or a list of ints."""
    if dim is None:
        return None
    if isinstance(dim, int) and not isinstance(dim, bool):
        return [dim]
    if isinstance(dim, (list, tuple)) and all(
            isinstance(d, int) and not isinstance(d, bool) for d in dim):
        return list(dim)
    raise TypeError(f"{layer}(dim={dim!r}): expected None, an int or a list "
                    "of ints")


def _ints(values, layer, arg):
    """A list of ints for argument `arg` (an int alone is a list of one)."""
    if isinstance(values, int) and not isinstance(values, bool):
        return [values]
    if isinstance(values, (list, tuple)) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in values):
        return list(values)
    raise TypeError(f"{layer}({arg}={values!r}): expected a list of ints")


def _reduce(layer, input, dim, keep_dim, name):
    return _layer(layer, input=_name(input, layer), dim=_dims(dim, layer),
                  keep_dim=bool(keep_dim), name=name)


def reduce_sum(input, dim=None, keep_dim=False, name=None):
    """The sum of `input`'s elements over the dims `dim` (op `reduce_sum`).

    dim: None (every dim), an int or a list of ints, each in [-rank, rank)
    (negative counts from the end); keep_dim: keep the reduced dims as 1s
    (else they are removed; reducing every dim gives shape [1]); name:
    prefix of the output's name.

        >>> x = fluid.layers.data("x", [3, 4])            # [-1, 3, 4]
        >>> s = fluid.layers.reduce_sum(x, dim=[1, 2])     # [-1]
        >>> k = fluid.layers.reduce_sum(x, dim=-1, keep_dim=True)  # [-1, 3, 1]
    """
    return _reduce("reduce_sum", input, dim, keep_dim, name)


def reduce_mean(input, dim=None, keep_dim=False, name=None):
    """The mean of `input`'s elements over the dims `dim` (op
    `reduce_mean`); the arguments as reduce_sum's.

        >>> x = fluid.layers.data("x", [3, 4])
        >>> m = fluid.layers.reduce_mean(x, dim=1)         # [-1, 4]
    """
    return _reduce("reduce_mean", input, dim, keep_dim, name)


def reduce_max(input, dim=None, keep_dim=False, name=None):
    """The largest element of `input` over the dims `dim` (op
    `reduce_max`); the arguments as reduce_sum's. The gradient goes to
    every element equal to the maximum (each tied element gets all of it),
    as in Fluid.

        >>> x = fluid.layers.data("x", [3, 4])
        >>> m = fluid.layers.reduce_max(x, dim=-1)         # [-1, 3]
    """
    return _reduce("reduce_max", input, dim, keep_dim, name)


def reduce_min(input, dim=None, keep_dim=False, name=None):
    """The smallest element of `input` over the dims `dim` (op
    `reduce_min`); the arguments as reduce_sum's; ties as reduce_max's.

        >>> x = fluid.layers.data("x", [3, 4])
        >>> m = fluid.layers.reduce_min(x, dim=[1, 2])     # [-1]
    """
    return _reduce("reduce_min", input, dim, keep_dim, name)


def reduce_prod(input, dim=None, keep_dim=False, name=None):
    """The product of `input`'s elements over the dims `dim` (op
    `reduce_prod`); the arguments as reduce_sum's. An element's gradient
    is the product of the others, zeros included.

        >>> x = fluid.layers.data("x", [3, 4])
        >>> p = fluid.layers.reduce_prod(x, dim=1)         # [-1, 4]
    """
    return _reduce("reduce_prod", input, dim, keep_dim, name)


def squeeze(input, axes, name=None):
    """`input` without its dims of size 1 at `axes` (op `squeeze2`).

    axes: a list of dims, each in [-rank, rank); a named dim whose size is
    not 1 stays (as in Fluid 1.8); an empty list removes every dim of size
    1. name: prefix of the output's name. The op also writes XShape, which
    carries input's shape to the gradient.

        >>> x = fluid.layers.data("x", [1, 5, 1])         # [-1, 1, 5, 1]
        >>> y = fluid.layers.squeeze(x, axes=[1, -1])      # [-1, 5]
    """
    return _layer("squeeze", input=_name(input, "squeeze"),
                  axes=_ints(axes, "squeeze", "axes"), name=name)


def unsqueeze(input, axes, name=None):
    """`input` with dims of size 1 inserted at `axes` (op `unsqueeze2`).

    axes: an int or a list of positions, inserted one after another, each
    in [-(r + 1), r] where r is the rank so far (negative counts from the
    end); name: prefix of the output's name.

        >>> x = fluid.layers.data("x", [5])               # [-1, 5]
        >>> y = fluid.layers.unsqueeze(x, axes=[1])        # [-1, 1, 5]
        >>> z = fluid.layers.unsqueeze(x, axes=[0, -1])    # [1, -1, 5, 1]
    """
    return _layer("unsqueeze", input=_name(input, "unsqueeze"),
                  axes=_ints(axes, "unsqueeze", "axes"), name=name)


def stack(x, axis=0):
    """The Variables of `x` (one shape and dtype) joined along a new dim at
    `axis` (op `stack`): n inputs of shape S give S with n inserted at
    axis.

    x: a Variable or a list of them; axis: in [-(R + 1), R] for inputs of
    rank R (negative counts from the end; default 0).

        >>> a = fluid.layers.data("a", [3])                # [-1, 3]
        >>> b = fluid.layers.data("b", [3])
        >>> ab = fluid.layers.stack([a, b], axis=1)         # [-1, 2, 3]
    """
    xs = x if isinstance(x, (list, tuple)) else [x]
    return _layer("stack", x=_var_list(xs, "stack", "x"), axis=axis)


def unstack(x, axis=0, num=None):
    """`x` cut into its slices along dim `axis`, that dim removed (op
    `unstack`); returns a list of Variables.

    axis: in [-R, R) (negative counts from the end); num: the number of
    slices, by default x's size along axis (which must then be known).

        >>> x = fluid.layers.data("x", [2, 3])             # [-1, 2, 3]
        >>> a, b = fluid.layers.unstack(x, axis=1)          # [-1, 3] each
    """
    out = _layer("unstack", x=_name(x, "unstack", "x"), axis=axis, num=num)
    return list(out) if isinstance(out, tuple) else [out]


def expand(x, expand_times, name=None):
    """`x` tiled expand_times[d] times along each dim d (op `expand`): the
    output's dim d is x's times expand_times[d]. The gradient sums over the
    copies.

    expand_times: a list of ints >= 1, one per dim of x; name: prefix of
    the output's name.

        >>> x = fluid.layers.data("x", [3])                # [-1, 3]
        >>> y = fluid.layers.expand(x, expand_times=[1, 2])  # [-1, 6]
    """
    return _layer("expand", x=_name(x, "expand", "x"),
                  expand_times=_ints(expand_times, "expand", "expand_times"),
                  name=name)


def gather(input, index, overwrite=True):
    """Rows of `input` picked along dim 0 (op `gather`): out[i] =
    input[index[i]], of shape [len(index)] + input's other dims.

    index: an int32 or int64 Variable of shape [N] or [N, 1], each in
    [0, input's rows) (an error otherwise; under CUDA a row of zeros);
    overwrite: for an index repeated, the gradient of that row is the last
    one's (True, Fluid's default) or the sum of all (False).

        >>> x = fluid.layers.data("x", [4, 8], append_batch_size=False)
        >>> i = fluid.layers.data("i", [1], dtype="int64")
        >>> rows = fluid.layers.gather(x, i)                # [-1, 8]
    """
    return _layer("gather", input=_name(input, "gather"),
                  index=_name(index, "gather", "index"),
                  overwrite=bool(overwrite))


def slice(input, axes, starts, ends):
    """input[starts[k]:ends[k]] along each dim axes[k], the other dims whole
    (op `slice`).

    axes, starts, ends: lists of ints of one length. A negative start or
    end counts from the end of its dim; both are then clamped to [0, dim]
    (an end past the dim, e.g. 2**31 - 1, means "to the end"), as in
    Fluid; the slice must not be empty.

        >>> x = fluid.layers.data("x", [4, 6])             # [-1, 4, 6]
        >>> y = fluid.layers.slice(x, axes=[1, 2], starts=[1, -3],
        ...                        ends=[3, 10000])          # [-1, 2, 3]
    """
    return _layer("slice", input=_name(input, "slice"),
                  axes=_ints(axes, "slice", "axes"),
                  starts=_ints(starts, "slice", "starts"),
                  ends=_ints(ends, "slice", "ends"))


def shape(input):
    """`input`'s shape as an int32 Variable [rank] (op `shape`), read when
    the program runs (so the batch dim has its fed size); no gradient.

        >>> x = fluid.layers.data("x", [3, 5])
        >>> s = fluid.layers.shape(x)                       # e.g. [8, 3, 5]
    """
    return _layer("shape", input=_name(input, "shape"))
