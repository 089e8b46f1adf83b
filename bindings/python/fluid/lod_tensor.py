"""Batches of variable-length sequences (Fluid's level-1 LoD tensors).

A LoDTensor holds the sequences' rows packed along dim 0 and their lengths
(`recursive_sequence_lengths()`, [[l1, l2, ...]]) or, equivalently, offsets
(`lod()`, [[0, l1, l1 + l2, ...]]). Only one level is supported. Feed one to
`Executor.run` for a data variable declared with `lod_level=1`. A run with
`return_numpy=False` gives one back for every fetch, as Fluid does: a
dense value is a LoDTensor without sequence lengths (`lod()` and
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


def _one_level(seq_lens, what):
    """[[l1, l2, ...]] (Fluid's form) or [l1, l2, ...] -> [l1, l2, ...]."""
    seq_lens = list(seq_lens)
    if seq_lens and isinstance(seq_lens[0], (list, tuple, np.ndarray)):
        if len(seq_lens) != 1:
            raise ValueError(f"{what}: {len(seq_lens)} levels of sequence "
                             "lengths; only one level is supported")
        seq_lens = list(seq_lens[0])
    return seq_lens


def _check_offsets(offsets, rows, what):
    if len(offsets) < 2 and rows != 0:
        raise ValueError(f"{what}: no sequences for {rows} rows")
    if offsets[-1] != rows:
        raise ValueError(f"{what}: the sequence lengths sum to "
                         f"{offsets[-1]} but the data has {rows} rows")


class LoDTensor:
    """Sequences packed along dim 0 with their lengths, as Fluid's
    LoDTensor: `set(array, place)`, `set_recursive_sequence_lengths`,
    `recursive_sequence_lengths()`, `set_lod`, `lod()`, `shape()`, and
    `np.array(t)` for the packed values."""

    def __init__(self, values=None, offsets=None):
        self._values = None if values is None else np.asarray(values)
        self._offsets = list(offsets) if offsets is not None else None

    def set(self, array, place=None):
        self._values = np.ascontiguousarray(array)

    def set_recursive_sequence_lengths(self, recursive_seq_lens):
        self._offsets = _lengths_to_offsets(
            _one_level(recursive_seq_lens, "LoDTensor"), "LoDTensor")

    def recursive_sequence_lengths(self):
        if self._offsets is None:
            return []
        return [[b - a for a, b in zip(self._offsets, self._offsets[1:])]]

    def set_lod(self, lod):
        lod = _one_level(lod, "LoDTensor.set_lod")
        if lod and lod[0] != 0:
            raise ValueError(f"LoDTensor.set_lod({lod}): offsets start at 0")
        if any(b < a for a, b in zip(lod, lod[1:])):
            raise ValueError(f"LoDTensor.set_lod({lod}): offsets must not "
                             "decrease")
        self._offsets = [int(v) for v in lod]

    def lod(self):
        return [] if self._offsets is None else [list(self._offsets)]

    def has_valid_recursive_sequence_lengths(self):
        """True when the lengths fit the values (a dense tensor, with no
        lengths, is valid as Fluid has it)."""
        if self._values is None:
            return False
        if self._offsets is None:
            return True
        return len(self._offsets) >= 1 and self._values.ndim > 0 and \
            self._offsets[-1] == self._values.shape[0]

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
    """A LoDTensor from `data` and one level of sequence lengths
    (`[[2, 3]]`: two sequences, of 2 and 3 rows), as Fluid's
    fluid.create_lod_tensor. `data`: a NumPy array of the packed rows, a
    list of sequences (each a list of values, e.g. word ids: int64 rows
    [N, 1]), or a LoDTensor (its values with new lengths)."""
    lengths = _one_level(recursive_seq_lens, "create_lod_tensor")
    if isinstance(data, LoDTensor):
        data = np.asarray(data)
    elif isinstance(data, list):
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
    offsets = _lengths_to_offsets(lengths, "create_lod_tensor")
    _check_offsets(offsets, data.shape[0] if data.ndim else 0,
                   "create_lod_tensor")
    return LoDTensor(data, offsets)


def create_random_int_lodtensor(recursive_seq_lens, base_shape, place, low,
                                high):
    """A LoDTensor of random int64 values in [low, high] (both included), of
    one level of sequence lengths (`[[2, 3]]`) and rows of `base_shape`
    (`[1]` for word ids): [sum(lengths)] + base_shape, as Fluid's
    fluid.create_random_int_lodtensor. `place` is accepted for Fluid's
    signature."""
    lengths = _one_level(recursive_seq_lens, "create_random_int_lodtensor")
    if isinstance(low, bool) or isinstance(high, bool) or not isinstance(
            low, (int, np.integer)) or not isinstance(
            high, (int, np.integer)) or low > high:
        raise ValueError(f"create_random_int_lodtensor(low={low!r}, "
                         f"high={high!r}): ints with low <= high")
    shape = [sum(lengths)] + list(base_shape)
    data = np.random.randint(low, high + 1, size=shape).astype(np.int64)
    return create_lod_tensor(data, [lengths], place)


def feed_value(name, value):
    """What the native executor takes for one feed: an array, or (array,
    offsets) for a LoDTensor or a (values, lengths) pair."""
    if isinstance(value, LoDTensor):
        if value._values is None:
            raise ValueError(f"feed '{name}': the LoDTensor holds no values")
        if value._offsets is None:
            return np.asarray(value._values)
        _check_offsets(value._offsets, value._values.shape[0],
                       f"feed '{name}'")
        return (value._values, value._offsets)
    if isinstance(value, tuple) and len(value) == 2 and \
            isinstance(value[0], np.ndarray):
        values = np.ascontiguousarray(value[0])
        offsets = _lengths_to_offsets(
            _one_level(value[1], f"feed '{name}'"), f"feed '{name}'")
        _check_offsets(offsets, values.shape[0] if values.ndim else 0,
                       f"feed '{name}'")
        return (values, offsets)
    return np.asarray(value)


def fetched_value(value, return_numpy=True):
    """A native fetch (an array, or (array, offsets) for a sequence batch)
    as `run` returns it: its array, or with return_numpy=False a LoDTensor
    (without sequence lengths for a dense value), as Fluid returns every
    fetch then."""
    values, offsets = value if isinstance(value, tuple) else (value, None)
    return values if return_numpy else LoDTensor(values, offsets)
