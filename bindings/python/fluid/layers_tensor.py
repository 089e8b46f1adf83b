"""Fluid 1.x's tensor layers over reductions and data movement:
fluid.layers.reduce_sum, reduce_mean, reduce_max, reduce_min,
reduce_prod, squeeze and unsqueeze.

    x = fluid.layers.data("x", [3, 4])              # [-1, 3, 4]
    row_sums = fluid.layers.reduce_sum(x, dim=-1)   # [-1, 3]
    total = fluid.layers.reduce_mean(x)             # [1]

Each builds the C++ layer of the same name (src/builder/tensor_ops_layers.cc)
with Fluid 1.x's arguments and defaults.
"""
from .layers import _layer, _name

__all__ = ["reduce_max", "reduce_mean", "reduce_min", "reduce_prod",
           "reduce_sum", "squeeze", "unsqueeze"]


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
