"""DataFeeder: turns a minibatch of samples, as a reader yields them, into
the feed dict of Executor.run (one array per data slot, batch first, in the
slot's dtype and shape)."""
import numpy as np

from .framework import Variable, default_main_program
from .lod_tensor import create_lod_tensor

__all__ = ["DataFeeder"]

# The kinds of values each slot dtype takes: integer slots refuse floats
# (a fractional label is a bug, not a value to truncate).
_ACCEPTS = {"float32": "biuf", "float64": "biuf", "int32": "biu",
            "int64": "biu"}


class _Slot:
    """One entry of the feed list: its name, dtype and per-sample shape."""

    def __init__(self, var):
        self.name = var.name
        self.dtype = var.dtype
        if self.dtype not in _ACCEPTS:
            raise ValueError(f"DataFeeder: slot '{self.name}' has dtype "
                             f"{self.dtype}, which cannot be fed")
        shape = list(var.shape)
        if not shape:
            raise ValueError(f"DataFeeder: slot '{self.name}' has no shape")
        # The batch dimension is the first: -1 for a layers.data slot, a
        # fixed size for one declared with append_batch_size=False.
        self.batch = None if shape[0] < 0 else shape[0]
        self.sample_shape = shape[1:]
        unknown = [d for d in self.sample_shape if d < 0]
        if len(unknown) > 1:
            raise ValueError(
                f"DataFeeder: slot '{self.name}' has shape {shape}: more "
                "than one unknown dimension besides the batch")
        self.sample_size = None if unknown else \
            int(np.prod(self.sample_shape, dtype=np.int64))
        # 1: each sample's entry is a sequence of rows of sample_shape.
        self.lod_level = getattr(var, "lod_level", 0)
        if self.lod_level and self.sample_size is None:
            raise ValueError(
                f"DataFeeder: slot '{self.name}' (lod_level=1) has shape "
                f"{shape}: the rows of a sequence need a known shape")

    def convert(self, entry, index):
        """One sample's entry as an array of the slot's dtype and
        per-sample shape (for a sequence slot: [length, *shape])."""
        if self.lod_level:
            return self._convert_sequence(entry, index)
        try:
            value = np.asarray(entry)
        except (TypeError, ValueError) as e:  # ragged nested lists
            raise ValueError(f"DataFeeder: slot '{self.name}', sample "
                             f"{index}: not an array ({e})") from None
        if value.dtype.kind not in _ACCEPTS[self.dtype]:
            raise ValueError(
                f"DataFeeder: slot '{self.name}' ({self.dtype}), sample "
                f"{index}: got {_describe(entry, value)}, expected "
                f"{'integers' if self.dtype.startswith('int') else 'numbers'}")
        converted = value.astype(self.dtype)
        if value.dtype.kind in "iu" and converted.dtype.kind == "i" and \
                not np.array_equal(converted, value):
            raise ValueError(
                f"DataFeeder: slot '{self.name}' ({self.dtype}), sample "
                f"{index}: a value does not fit {self.dtype}")
        if self.sample_size is not None and converted.size != self.sample_size:
            raise ValueError(
                f"DataFeeder: slot '{self.name}', sample {index}: "
                f"{converted.size} element(s) of shape {list(value.shape)}, "
                f"the slot takes {self.sample_size} per sample (shape "
                f"{self.sample_shape})")
        try:
            return converted.reshape(self.sample_shape)
        except ValueError:
            raise ValueError(
                f"DataFeeder: slot '{self.name}', sample {index}: "
                f"{converted.size} element(s) do not fit the per-sample "
                f"shape {self.sample_shape}") from None


    def _convert_sequence(self, entry, index):
        """A sequence: a list or array of rows (a list of word ids for a
        [1] slot), possibly empty."""
        if np.ndim(entry) == 0 and not isinstance(entry, (list, tuple)):
            raise ValueError(
                f"DataFeeder: slot '{self.name}' is a sequence slot "
                f"(lod_level=1), sample {index}: got "
                f"{type(entry).__name__} {entry!r}"[:160] +
                ", expected a sequence (a list or array of rows)")
        try:
            value = np.asarray(entry)
        except (TypeError, ValueError) as e:
            raise ValueError(f"DataFeeder: slot '{self.name}', sample "
                             f"{index}: not a sequence of rows ({e})") from None
        if value.size == 0:
            return np.zeros([0] + self.sample_shape, dtype=self.dtype)
        if value.dtype.kind not in _ACCEPTS[self.dtype]:
            raise ValueError(
                f"DataFeeder: slot '{self.name}' ({self.dtype}), sample "
                f"{index}: got {_describe(entry, value)}, expected "
                f"{'integers' if self.dtype.startswith('int') else 'numbers'}")
        if value.size % self.sample_size:
            raise ValueError(
                f"DataFeeder: slot '{self.name}', sample {index}: "
                f"{value.size} element(s) are not a whole number of rows of "
                f"shape {self.sample_shape}")
        return value.astype(self.dtype).reshape([-1] + self.sample_shape)


def _describe(entry, value):
    if value.ndim == 0:
        return f"{type(entry).__name__} {entry!r}"[:80]
    return f"an array of {value.dtype}"


class DataFeeder:
    """Converts minibatches for `Executor.run(feed=...)`.

    feed_list: the data Variables (or their names, looked up in `program`,
    by default the default main program), one per entry of a sample.
    place: where the program runs (the executor copies the feed there).
    A feeder holds no state past its construction: threads may share one.

        feeder = fluid.DataFeeder(feed_list=[image, label],
                                  place=fluid.CPUPlace())
        for minibatch in fluid.io.batch(reader, 64)():
            exe.run(main, feed=feeder.feed(minibatch), fetch_list=[loss])
    """

    def __init__(self, feed_list, place, program=None):
        program = program or default_main_program()
        if isinstance(feed_list, (str, Variable)):
            feed_list = [feed_list]
        self.feed_vars = []
        for v in feed_list:
            if isinstance(v, str):
                v = program.var(v)  # KeyError naming an unknown one
            elif not isinstance(v, Variable):
                raise TypeError("DataFeeder: feed_list takes Variables or "
                                f"names, got {type(v).__name__}")
            self.feed_vars.append(v)
        if not self.feed_vars:
            raise ValueError("DataFeeder: feed_list is empty")
        self.feed_names = [v.name for v in self.feed_vars]
        self.place = place
        self._slots = [_Slot(v) for v in self.feed_vars]

    def feed(self, iterable):
        """`iterable`: the samples of one minibatch, each a tuple or list
        with one entry per slot. Returns {slot name: array [B, ...]}.

        Entries convert to the slot's dtype (a float64 array into a float32
        slot, Python ints into an int64 one) and reshape to its per-sample
        shape (784 values or a [1, 28, 28] array into a [-1, 1, 28, 28]
        slot; an int into a [-1, 1] one). A sample with the wrong number of
        entries, an entry whose element count does not fit its slot, or one
        of the wrong type is a ValueError naming the slot and the sample.

        A sequence slot (declared with lod_level=1) takes per sample a
        sequence of rows of its shape, of any length (0 too): a list of word
        ids for a [1] int64 slot, a [length, 8] array for an [8] one. They
        are packed into one fluid.LoDTensor (rows of all samples along dim
        0, with the lengths)."""
        columns = [[] for _ in self._slots]
        for index, sample in enumerate(iterable):
            if not isinstance(sample, (tuple, list)):
                if len(self._slots) != 1:
                    raise ValueError(
                        f"DataFeeder: sample {index}: got "
                        f"{type(sample).__name__}, expected a tuple or list "
                        f"of {len(self._slots)} entries ({self._slot_list()})")
                sample = (sample,)
            if len(sample) != len(self._slots):
                raise ValueError(
                    f"DataFeeder: sample {index} has {len(sample)} "
                    f"entr{'y' if len(sample) == 1 else 'ies'}, the feed "
                    f"list has {len(self._slots)} slots "
                    f"({self._slot_list()})")
            for slot, column, entry in zip(self._slots, columns, sample):
                column.append(slot.convert(entry, index))
        if not columns[0]:
            raise ValueError("DataFeeder: the minibatch has no samples")
        out = {}
        for slot, column in zip(self._slots, columns):
            if slot.lod_level:
                lengths = [len(c) for c in column]
                out[slot.name] = create_lod_tensor(np.concatenate(column),
                                                   [lengths])
                continue
            if slot.sample_size is None:
                shapes = {c.shape for c in column}
                if len(shapes) > 1:
                    raise ValueError(
                        f"DataFeeder: slot '{slot.name}': samples of "
                        f"different shapes {sorted(shapes)} in one batch")
            if slot.batch is not None and len(column) != slot.batch:
                raise ValueError(
                    f"DataFeeder: slot '{slot.name}' has a fixed batch of "
                    f"{slot.batch}, the minibatch has {len(column)} samples")
            out[slot.name] = np.stack(column)
        return out

    def decorate_reader(self, reader, multi_devices=False, num_places=None,
                        drop_last=True):
        """A reader creator yielding feed(minibatch) for each minibatch of
        the batch reader `reader` (one device only)."""
        if multi_devices:
            raise NotImplementedError(
                "DataFeeder.decorate_reader: multi_devices is not supported; "
                "one process per device trains with fluid.MPIExecutor and "
                "fluid.io.shard")

        def feed_reader():
            for minibatch in reader():
                yield self.feed(minibatch)

        return feed_reader

    def _slot_list(self):
        return ", ".join(self.feed_names)
