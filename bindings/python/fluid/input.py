"""Fluid 1.6's input layers at the top of the package: `fluid.data`,
`fluid.embedding` and `fluid.one_hot`. Unlike their `fluid.layers`
namesakes they take shapes as written, batch dimension included, and ids
without a trailing dimension of 1:

    >>> ids = fluid.data("ids", shape=[None, 16], dtype="int64")  # [-1, 16]
    >>> emb = fluid.embedding(ids, size=[1000, 32])               # [-1, 16, 32]
    >>> hot = fluid.one_hot(ids, depth=1000)                      # [-1, 16, 1000]
"""
from . import layers as _layers

__all__ = ["data", "embedding", "one_hot"]


def data(name, shape, dtype="float32", lod_level=0):
    """Declares a variable the executor feeds, of exactly `shape` (the batch
    dimension included: None or -1 for a size known only at run time; no
    batch dimension is prepended, unlike fluid.layers.data).

        >>> image = fluid.data("image", shape=[None, 1, 28, 28])
        >>> label = fluid.data("label", shape=[None, 1], dtype="int64")
    """
    if not isinstance(shape, (list, tuple)) or not shape:
        raise ValueError(f"fluid.data({name!r}, shape={shape!r}): a list of "
                         "dims, None or -1 for one known only at run time")
    dims = []
    for d in shape:
        if d is None:
            d = -1
        if isinstance(d, bool) or not isinstance(d, int) or d < -1 or d == 0:
            raise ValueError(f"fluid.data({name!r}, shape={list(shape)!r}): "
                             f"dim {d!r} must be a positive int, None or -1")
        dims.append(d)
    return _layers.data(name, dims, dtype=dtype, append_batch_size=False,
                        lod_level=lod_level)


def _with_unit_dim(input, layer):
    """`input` [..., n] reshaped to [..., n, 1], what the fluid.layers form
    takes (dims kept as they are: 0 copies the input's)."""
    shape = getattr(input, "shape", None)
    if shape is None:
        raise TypeError(f"fluid.{layer}(input=...): expected a Variable, got "
                        f"{type(input).__name__}")
    if shape and shape[-1] == 1 and len(shape) == 1:
        return input
    return _layers.reshape(input, [0] * len(shape) + [1])


def embedding(input, size, is_sparse=False, is_distributed=False,
              padding_idx=None, param_attr=None, dtype="float32"):
    """Looks up the rows of a [size[0], size[1]] table: ids [..., n] (int64)
    give [..., n, size[1]]. Arguments as fluid.layers.embedding's (a sparse
    gradient with is_sparse=True; padding_idx's row reads as zeros and gets
    no gradient).

        >>> ids = fluid.data("ids", shape=[None, 8], dtype="int64")
        >>> fluid.embedding(ids, size=[100, 16]).shape
        (-1, 8, 16)
    """
    return _layers.embedding(_with_unit_dim(input, "embedding"), size,
                             is_sparse=is_sparse,
                             is_distributed=is_distributed,
                             padding_idx=padding_idx, param_attr=param_attr,
                             dtype=dtype)


def one_hot(input, depth, allow_out_of_range=False):
    """One-hot rows of `depth` for ids [..., n] (int64): [..., n, depth].
    An id outside [0, depth) is an error at run time, or with
    allow_out_of_range=True a row of zeros.

        >>> label = fluid.data("label", shape=[None, 1], dtype="int64")
        >>> fluid.one_hot(label, depth=10).shape
        (-1, 1, 10)
    """
    return _layers.one_hot(_with_unit_dim(input, "one_hot"), depth,
                           allow_out_of_range=allow_out_of_range)
