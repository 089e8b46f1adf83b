"""Fluid 1.x's layers of a loop over a batch of sequences of different
lengths (what DynamicRNN is built from): the rank table of the batch
(its sequences longest first), the batch split into loop steps and merged
back, the loop state shrunk as sequences end, and rows reordered by rank.

    x = fluid.layers.data("x", [4], dtype="float64", lod_level=1)
    table = fluid.layers.lod_rank_table(x)
    steps = fluid.layers.lod_tensor_to_array(x, table)   # step t: row t of
                                                          # each sequence
    n = fluid.layers.max_sequence_len(table)              # int64 [1]
    # inside a While over i < n: x_t = array_read(steps, i);
    # h_prev = shrink_memory(h, i, table) (one row per running sequence)
    out = fluid.layers.array_to_lod_tensor(steps, table)  # x again

lod_reset and lod_append give a tensor new LoD offsets (its data kept).

Tensors here carry one level of LoD: level is 0, and lod_append takes a
tensor without LoD.
"""
import numbers

from .framework import Variable
from .layers import _layer, _name

__all__ = ["lod_rank_table", "max_sequence_len", "lod_tensor_to_array",
           "array_to_lod_tensor", "shrink_memory",
           "reorder_lod_tensor_by_rank", "lod_reset", "lod_append"]


def lod_rank_table(x, level=0):
    """The rank table of x's sequences: their (index, length), longest
    first, sequences of one length in their order. x must carry LoD
    (lod_level=1); level must be 0.

        >>> table = fluid.layers.lod_rank_table(x)
    """
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(f"lod_rank_table(level={level!r}): expected an int "
                        "(0)")
    return _layer("lod_rank_table", x=_name(x, "lod_rank_table", "x"),
                  level=level)


def max_sequence_len(rank_table):
    """The longest sequence length of `rank_table`, an int64 [1] Variable
    (0 for an empty batch).

        >>> n = fluid.layers.max_sequence_len(table)
    """
    return _layer("max_sequence_len",
                  rank_table=_name(rank_table, "max_sequence_len",
                                   "rank_table"))


def lod_tensor_to_array(x, table):
    """x's sequences as a tensor array of loop steps: slot t holds row t of
    every sequence longer than t, in the table's order (longest first).

        >>> steps = fluid.layers.lod_tensor_to_array(x, table)
    """
    return _layer("lod_tensor_to_array",
                  x=_name(x, "lod_tensor_to_array", "x"),
                  table=_name(table, "lod_tensor_to_array", "table"))


def array_to_lod_tensor(x, table):
    """The steps of tensor array `x` merged back into sequences, in their
    order, with their LoD: the inverse of lod_tensor_to_array.

        >>> out = fluid.layers.array_to_lod_tensor(steps, table)
    """
    return _layer("array_to_lod_tensor",
                  x=_name(x, "array_to_lod_tensor", "x"),
                  table=_name(table, "array_to_lod_tensor", "table"))


def shrink_memory(x, i, table):
    """The first rows of x, one per sequence of `table` longer than step i
    (an int64 [1] Variable): a loop's state for the sequences still
    running. Its gradient is zero in the rows dropped.

        >>> h_prev = fluid.layers.shrink_memory(h, i, table)
    """
    return _layer("shrink_memory", x=_name(x, "shrink_memory", "x"),
                  i=_name(i, "shrink_memory", "i"),
                  table=_name(table, "shrink_memory", "table"))


def reorder_lod_tensor_by_rank(x, rank_table):
    """x's sequences (or, for x without LoD, its rows) in the order of
    `rank_table`: the k-th is x's sequence the table ranks k-th.

        >>> init = fluid.layers.reorder_lod_tensor_by_rank(h0, table)
    """
    return _layer("reorder_lod_tensor_by_rank",
                  x=_name(x, "reorder_lod_tensor_by_rank", "x"),
                  rank_table=_name(rank_table, "reorder_lod_tensor_by_rank",
                                   "rank_table"))


def _offsets(lod, layer, arg):
    """A list of int offsets (Fluid takes a list or a tuple; NumPy ints
    count as ints)."""
    if not isinstance(lod, (list, tuple)) or not all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool)
            for v in lod):
        raise TypeError(f"{layer}({arg}={lod!r}): expected a list of int "
                        "offsets, e.g. [0, 2, 5]")
    return [int(v) for v in lod]


def lod_reset(x, y=None, target_lod=None):
    """x's data with new LoD offsets, [0, ..., rows of x]: y's LoD when y
    (a Variable) has one, else the int32/int64 offsets y holds; without
    y, `target_lod` (a list). One of y and target_lod must be given.

        >>> out = fluid.layers.lod_reset(x, target_lod=[0, 2, 5])
        >>> out = fluid.layers.lod_reset(x, y=words)   # words' LoD
    """
    if y is None and target_lod is None:
        raise ValueError("lod_reset: y and target_lod should not be both "
                         "None; give the new LoD")
    if y is not None:
        return _layer("lod_reset", x=_name(x, "lod_reset", "x"),
                      y=_name(y, "lod_reset", "y"), target_lod=None)
    return _layer("lod_reset", x=_name(x, "lod_reset", "x"), y=None,
                  target_lod=_offsets(target_lod, "lod_reset", "target_lod"))


def lod_append(x, level):
    """x's data with the LoD offsets `level`, a list or a Variable of
    int32/int64 offsets, [0, ..., rows of x]. x must carry no LoD (a
    tensor here carries one level; Fluid appends a level below x's).

        >>> seqs = fluid.layers.lod_append(x, [0, 1, 3])
    """
    if x is None:
        raise ValueError("lod_append: x can't be None")
    if isinstance(level, Variable):
        return _lod_append_var(x, level)
    if not isinstance(level, (list, tuple)):
        raise ValueError(f"lod_append(level={level!r}): level must be a "
                         "list, a tuple or a Variable")
    return _layer("lod_append", x=_name(x, "lod_append", "x"),
                  level=_offsets(level, "lod_append", "level"))


def _lod_append_var(x, level):
    """lod_append with the offsets a Variable holds (what lod_append
    calls for a Variable `level`)."""
    return _layer("_lod_append_var", x=_name(x, "lod_append", "x"),
                  level=_name(level, "lod_append", "level"))
