"""Fluid 1.x's tensor layers over reductions and data movement:
fluid.layers.reduce_sum, reduce_mean, reduce_max, reduce_min and
reduce_prod.

    x = fluid.layers.data("x", [3, 4])              # [-1, 3, 4]
    row_sums = fluid.layers.reduce_sum(x, dim=-1)   # [-1, 3]
    total = fluid.layers.reduce_mean(x)             # [1]

Each builds the C++ layer of the same name (src/builder/tensor_ops_layers.cc)
with Fluid 1.x's arguments and defaults.
"""
from .layers import _layer, _name

__all__ = ["reduce_max", "reduce_mean", "reduce_min", "reduce_prod",
           "reduce_sum"]


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
