"""The passes of fluid.io's data loaders (data_loader.py): what one pass
over a loader's generator yields to the consumer, read in the consumer's
thread or by a thread of its own (the double buffer).

A pass's items are (feed, short) pairs, this rank's batches in order: feed
a {name: LoDTensor} dict of one batch, short True for a batch of the
pass's remainder (fewer than the ranks; not every rank has one), and
(None, True) where the remainder leaves this rank without one. Under an
MPI launcher a source shards the generator's batches as fluid.io.shard
does (see data_loader.py)."""
import atexit
import collections
import threading
import weakref

import numpy as np

from .data_feeder import DataFeeder
from .lod_tensor import LoDTensor, create_lod_tensor
from .reader import _data_ranks
from .reader import batch as _batch_reader


# A pass's end, as its source hands it to the consumer.
_END = object()
# How long closing a pass waits for its thread to leave the user's
# generator (which it cannot interrupt) before leaving it to end alone.
_JOIN_SECONDS = 30.0


def _positive_int(value, what):
    if isinstance(value, (bool, np.bool_)) or \
            not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{what} must be a positive int, got {value!r}")
    return int(value)


def _flag(value, what):
    if isinstance(value, (bool, np.bool_)) or value in (0, 1):
        return bool(value)
    raise ValueError(f"{what} must be True or False, got {value!r}")


def _built_on_shard(reader):
    """True when `reader` is fluid.io.shard's, or wraps one (through the
    closures of fluid.io's decorators): it already yields this rank's
    part."""
    seen, todo = set(), [reader]
    while todo and len(seen) < 256:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        if (getattr(f, "__module__", None), getattr(f, "__qualname__", "")) \
                == (__package__ + ".reader", "shard.<locals>.shard_reader"):
            return True
        for cell in getattr(f, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            # The readers a decorator wraps: one, or a few (compose, chain).
            values = value[:16] if isinstance(value, (list, tuple)) \
                else [value]
            todo.extend(v for v in values if callable(v))
    return False


def _wrap(value):
    """A feed value as a LoDTensor, which is what Fluid's loaders yield:
    np.array(t) reads it; a sequence slot's carries its lengths."""
    if isinstance(value, LoDTensor):
        return value
    if isinstance(value, tuple) and len(value) == 2 and \
            isinstance(value[0], np.ndarray):  # (values, lengths)
        return create_lod_tensor(value[0], value[1])
    return LoDTensor(np.ascontiguousarray(value))


class _Feed(dict):
    """One batch's {name: LoDTensor}. `short`: the batch is part of a
    pass's remainder, which not every rank has."""

    short = False


class _Source:
    """A data source of a loader: the reader creator, what it yields
    (samples, sample lists or batches) and how this rank shards it."""

    def __init__(self, kind, reader, feed_vars, batch_size=None,
                 drop_last=True, shard=None):
        self.kind = kind
        self.reader = reader
        self.names = [v.name for v in feed_vars]
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.shard = not _built_on_shard(reader) if shard is None \
            else _flag(shard, "shard")
        self._feeder = None if kind == "batch" else DataFeeder(
            feed_vars, None, program=feed_vars[0].program)

    def _raw(self):
        """The pass's batches, unconverted."""
        if self.kind == "sample":
            return _batch_reader(self.reader, self.batch_size,
                                 self.drop_last)()
        return self.reader()

    def _convert(self, raw, index):
        if self.kind != "batch":
            if not isinstance(raw, (list, tuple)):
                raise ValueError(
                    f"batch {index}: a sample-list generator yields lists of "
                    f"samples, got {type(raw).__name__}")
            out = _Feed((n, _wrap(v))
                        for n, v in self._feeder.feed(raw).items())
            return out
        return _Feed(zip(self.names, self._batch_entries(raw, index)))

    def _batch_entries(self, raw, index):
        one = len(self.names) == 1
        if one and (isinstance(raw, (np.ndarray, LoDTensor))):
            raw = (raw,)
        if not isinstance(raw, (list, tuple)) or len(raw) != len(self.names):
            got = f"{len(raw)} entries" if isinstance(raw, (list, tuple)) \
                else type(raw).__name__
            raise ValueError(
                f"batch {index}: a batch generator yields one value per feed "
                f"variable ({len(self.names)}: {', '.join(self.names)}), "
                f"got {got}")
        return [_wrap(v) for v in raw]

    def items(self, drop_remainder):
        """This rank's batches of one pass, as (feed, short) pairs; (None,
        True) when the remainder leaves this rank without a batch."""
        rank, world = _data_ranks() if self.shard else (0, 1)
        position, mine = -1, None
        raws = iter(self._raw())
        try:
            for position, raw in enumerate(raws):
                if position % world == rank:
                    mine = (raw, position)
                if position % world == world - 1:
                    yield self._convert(*mine), False
                    mine = None
        finally:
            getattr(raws, "close", lambda: None)()  # the generator's finally
        remainder = (position + 1) % world
        if remainder == 0 or drop_remainder:
            return
        if mine is None:
            yield None, True
            return
        feed = self._convert(*mine)
        feed.short = True
        yield feed, True


class _InlinePass:
    """A pass read in the consumer's thread (use_double_buffer=False)."""

    def __init__(self, items):
        self._items = items

    def get(self):
        return next(self._items, _END)

    def close(self):
        self._items.close()


class _ThreadPass:
    """A pass read and converted by a thread, up to `capacity` batches
    ahead (use_double_buffer=True). The consumer gets the batches in
    order, then the generator's exception if it raised one. close() stops
    the thread (at its next batch) and waits for it to end. Thread-safe."""

    def __init__(self, items, capacity):
        self._cond = threading.Condition()
        self._buf = collections.deque()
        self._capacity = capacity
        self._stopped = self._done = False
        self._error = None
        self._thread = threading.Thread(target=self._fill, args=(items,),
                                        name="fluid.io.DataLoader",
                                        daemon=True)
        _live_passes.add(self)
        self._thread.start()

    def _fill(self, items):
        try:
            for item in items:
                with self._cond:
                    while len(self._buf) >= self._capacity and \
                            not self._stopped:
                        self._cond.wait()
                    if self._stopped:
                        return
                    self._buf.append(item)
                    self._cond.notify_all()
        except BaseException as e:  # noqa: B902  (raised again by get)
            self._error = e
        finally:
            items.close()
            with self._cond:
                self._done = True
                self._cond.notify_all()

    def get(self):
        with self._cond:
            while not self._buf and not self._done and not self._stopped:
                self._cond.wait()
            if self._buf:
                item = self._buf.popleft()
                self._cond.notify_all()
                return item
            error, self._error = self._error, None
        if error is not None:
            raise error
        return _END

    def close(self, wait=_JOIN_SECONDS):
        with self._cond:
            self._stopped = True
            self._buf.clear()
            self._cond.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join(wait)
        _live_passes.discard(self)


# Passes whose thread may run: stopped at exit.
_live_passes = weakref.WeakSet()


@atexit.register
def _stop_live_passes():
    for p in list(_live_passes):
        p.close(wait=5.0)
