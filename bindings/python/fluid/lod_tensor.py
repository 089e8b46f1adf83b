"""Batches of variable-length sequences (Fluid's LoD tensors).

A LoDTensor holds the sequences' rows packed along dim 0 and their lengths
(`recursive_sequence_lengths()`, [[l1, l2, ...]]) or, equivalently, offsets
(`lod()`, [[0, l1, l1 + l2, ...]]). Several levels nest sequences of
sequences, coarsest first, as in Fluid: [[2, 1], [1, 3, 2]] is two
sources, the first of two sentences (1 and 3 rows), the second of one (2
rows); each level's lengths count the sequences of the level below, the
last level's count rows. Feed one to `Executor.run` for a data variable
declared with `lod_level` of its levels. A run with `return_numpy=False`
gives one back for every fetch, as Fluid does: a dense value is a
LoDTensor without sequence lengths (`lod()` and
`recursive_sequence_lengths()` are []).
"""
import numpy as np

__all__ = ["LoDTensor", "create_lod_tensor", "create_random_int_lodtensor"]


def _lengths_to_offsets(lengths, what):
    offsets = [0]
    for i, n in enumerate(lengths):
        if isinstance(n, (bool, np.bool_)) or not isinstance(
                n, (int, np.integer)) or n < 0:
            raise ValueError(f"{what}: sequence {i} has length {n!r}; "
                             "lengths are ints >= 0")
        offsets.append(offsets[-1] + int(n))
    return offsets


def _levels(seq_lens):
    """[[l1, l2, ...], ...] (Fluid's form, one list per level) or
    [l1, l2, ...] (one level) -> a list of levels of lengths ([] for
    none)."""
    seq_lens = list(seq_lens)
    if not seq_lens:
        return []
    if seq_lens and isinstance(seq_lens[0], (list, tuple, np.ndarray)):
        return [list(level) for level in seq_lens]
    return [seq_lens]


def _check_levels(levels, rows, what):
    """Offsets of every level: each ends at the sequence count of the
    level below, the last at the rows."""
    for k, offsets in enumerate(levels):
        last = k == len(levels) - 1
        end = rows if last else len(levels[k + 1]) - 1
        at = what if len(levels) == 1 else \
            f"{what} (level {k} of {len(levels)})"
        if len(offsets) < 2 and end != 0:
            raise ValueError(f"{at}: no sequences for {end} "
                             f"{'rows' if last else 'sequences below'}")
        if offsets[-1] != end:
            raise ValueError(
                f"{at}: the sequence lengths sum to {offsets[-1]} but the "
                + (f"data has {rows} rows" if last else
                   f"level below has {end} sequences"))


def _to_offsets(seq_lens, what):
    return [_lengths_to_offsets(level, what) for level in _levels(seq_lens)]


class LoDTensor:
    """Sequences packed along dim 0 with their lengths, as Fluid's
    LoDTensor: `set(array, place)`, `set_recursive_sequence_lengths`,
    `recursive_sequence_lengths()`, `set_lod`, `lod()`, `shape()`, and
    `np.array(t)` for the packed values. Every level of a multi-level LoD,
    coarsest first."""

    def __init__(self, values=None, offsets=None):
        self._values = None if values is None else np.asarray(values)
        # Offsets of each level, coarsest first (None: no LoD). `offsets`
        # is one level's list or a list of levels.
        self._levels = None
        if offsets is not None and len(offsets):
            self._levels = [list(map(int, o)) for o in offsets] \
                if isinstance(offsets[0], (list, tuple, np.ndarray)) \
                else [list(map(int, offsets))]

    def set(self, array, place=None):
        self._values = np.ascontiguousarray(array)

    def set_recursive_sequence_lengths(self, recursive_seq_lens):
        self._levels = _to_offsets(recursive_seq_lens, "LoDTensor") or None

    def recursive_sequence_lengths(self):
        if self._levels is None:
            return []
        return [[b - a for a, b in zip(o, o[1:])] for o in self._levels]

    def set_lod(self, lod):
        levels = _levels(lod)
        for level in levels:
            if level and level[0] != 0:
                raise ValueError(f"LoDTensor.set_lod({lod}): offsets start "
                                 "at 0")
            if any(b < a for a, b in zip(level, level[1:])):
                raise ValueError(f"LoDTensor.set_lod({lod}): offsets must "
                                 "not decrease")
        self._levels = [[int(v) for v in level] for level in levels] or None

    def lod(self):
        return [] if self._levels is None else [list(o) for o in self._levels]

    def has_valid_recursive_sequence_lengths(self):
        """True when the lengths fit the values (a dense tensor, with no
        lengths, is valid as Fluid has it)."""
        if self._values is None:
            return False
        if self._levels is None:
            return True
        if self._values.ndim == 0:
            return False
        try:
            _check_levels(self._levels, self._values.shape[0], "LoDTensor")
        except ValueError:
            return False
        return True

    def shape(self):
        return [] if self._values is None else list(self._values.shape)

    def __array__(self, dtype=None, copy=None):
        if self._values is None:
            raise ValueError("LoDTensor holds no values: set(array, place) "
                             "first")
        v = self._values
        return v if dtype is None else v.astype(dtype)

    def __repr__(self):
        return (f"LoDTensor(shape={self.shape()}, "
                f"recursive_sequence_lengths={self.recursive_sequence_lengths()})")


def create_lod_tensor(data, recursive_seq_lens, place=None):
    """A LoDTensor from `data` and its sequence lengths, one list per level
    (`[[2, 3]]`: two sequences, of 2 and 3 rows; `[[2, 1], [1, 3, 2]]`:
    two sources of 2 and 1 sentences, of 1, 3 and 2 rows), as Fluid's
    fluid.create_lod_tensor. `data`: a NumPy array of the packed rows, a
    list of sequences (each a list of values, e.g. word ids: int64 rows
    [N, 1]; one level), or a LoDTensor (its values with new lengths)."""
    levels = _levels(recursive_seq_lens)
    if isinstance(data, LoDTensor):
        data = np.asarray(data)
    elif isinstance(data, list):
        lengths = levels[-1]
        for i, (seq, n) in enumerate(zip(data, lengths)):
            if len(seq) != n:
                raise ValueError(f"create_lod_tensor: sequence {i} has "
                                 f"{len(seq)} values but its length is {n}")
        flat = [v for seq in data for v in seq]
        data = np.asarray(flat, dtype=np.int64 if all(
            isinstance(v, (int, np.integer)) for v in flat) else None)
        if data.ndim == 1:
            data = data.reshape(-1, 1)
    data = np.ascontiguousarray(data)
    offsets = [_lengths_to_offsets(level, "create_lod_tensor")
               for level in levels]
    _check_levels(offsets, data.shape[0] if data.ndim else 0,
                  "create_lod_tensor")
    return LoDTensor(data, offsets)


def create_random_int_lodtensor(recursive_seq_lens, base_shape, place, low,
                                high):
    """A LoDTensor of random int64 values in [low, high] (both included), of
    the sequence lengths given (`[[2, 3]]`, one list per level) and rows of
    `base_shape` (`[1]` for word ids): [sum of the last level's lengths] +
    base_shape, as Fluid's fluid.create_random_int_lodtensor. `place` is
    accepted for Fluid's signature."""
    levels = _levels(recursive_seq_lens)
    if isinstance(low, bool) or isinstance(high, bool) or not isinstance(
            low, (int, np.integer)) or not isinstance(
            high, (int, np.integer)) or low > high:
        raise ValueError(f"create_random_int_lodtensor(low={low!r}, "
                         f"high={high!r}): ints with low <= high")
    shape = [sum(levels[-1])] + list(base_shape)
    data = np.random.randint(low, high + 1, size=shape).astype(np.int64)
    return create_lod_tensor(data, levels, place)


def feed_value(name, value):
    """What the native executor takes for one feed: an array, or (array,
    offsets) for a LoDTensor or a (values, lengths) pair: one level's
    offsets, or a list of levels' offsets."""
    if isinstance(value, LoDTensor):
        if value._values is None:
            raise ValueError(f"feed '{name}': the LoDTensor holds no values")
        if value._levels is None:
            return np.asarray(value._values)
        levels = value._levels
    elif isinstance(value, tuple) and len(value) == 2 and \
            isinstance(value[0], np.ndarray):
        value = (np.ascontiguousarray(value[0]), value[1])
        levels = _to_offsets(value[1], f"feed '{name}'")
    else:
        return np.asarray(value)
    values = value._values if isinstance(value, LoDTensor) else value[0]
    _check_levels(levels, values.shape[0] if values.ndim else 0,
                  f"feed '{name}'")
    return (values, levels[0] if len(levels) == 1 else levels)


def fetched_value(value, return_numpy=True):
    """A native fetch (an array, or (array, offsets) for a sequence batch)
    as `run` returns it: its array, or with return_numpy=False a LoDTensor
    (without sequence lengths for a dense value), as Fluid returns every
    fetch then."""
    values, offsets = value if isinstance(value, tuple) else (value, None)
    return values if return_numpy else LoDTensor(values, offsets)
