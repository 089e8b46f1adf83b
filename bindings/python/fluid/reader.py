"""Reader decorators, reached as `fluid.io.batch`, `fluid.io.shuffle`, ...

A *reader creator* is a callable taking no argument that returns an
iterable of samples (a generator function, typically); calling it again
starts a new pass over the data. Each decorator takes reader creators and
returns a new one, so they nest:

    train = fluid.io.batch(
        fluid.io.shard(fluid.io.shuffle(
            fluid.datasets.fashion_mnist.train_reader(), 10000, seed=1)),
        64, drop_last=True)
    for minibatch in train():      # a list of 64 (image, label) samples
        exe.run(main, feed=feeder.feed(minibatch), fetch_list=[loss])

Decorators that start threads (`buffered`, `xmap_readers`) stop them when
the consumer stops early (a `break`, `firstn`), and re-raise in the
consumer an exception raised by the reader or the mapper.
"""
import itertools
import multiprocessing
import queue
import traceback
import random
import threading

from . import _core
from .framework import default_main_program

__all__ = [
    "ComposeNotAligned", "batch", "buffered", "cache", "chain", "compose",
    "firstn", "map_readers", "multiprocess_reader", "shard", "shuffle",
    "xmap_readers",
]


class ComposeNotAligned(ValueError):
    """compose(..., check_alignment=True): the readers ran out at different
    samples."""


def _positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{what} must be a positive int, got {value!r}")
    return value


def batch(reader, batch_size, drop_last=False):
    """Groups the samples of `reader` into lists of `batch_size`. The last,
    shorter list is yielded too unless `drop_last`."""
    _positive_int(batch_size, "batch: batch_size")

    def batch_reader():
        group = []
        for sample in reader():
            group.append(sample)
            if len(group) == batch_size:
                yield group
                group = []
        if group and not drop_last:
            yield group

    return batch_reader


def shuffle(reader, buf_size, seed=None):
    """Shuffles the samples of `reader` within windows of `buf_size`: fills
    a buffer of `buf_size` samples, yields it in random order, and so on
    (the last, partial buffer too).

    Deterministic: the k-th pass (the k-th call of the returned creator)
    shuffles with a generator seeded by (seed, k), so every pass has its
    own order, and a process that makes the same passes gets the same
    orders. `seed=None` takes `fluid.default_main_program().random_seed`
    (the seed of the initialisers; 0 unless set) when `shuffle` is called.
    Ranks that shuffle with the same seed and then `shard` see one order
    and take disjoint parts of it."""
    _positive_int(buf_size, "shuffle: buf_size")
    if seed is None:
        seed = default_main_program().random_seed
    passes = itertools.count()

    def shuffle_reader():
        rng = random.Random(f"fluid.io.shuffle:{int(seed)}:{next(passes)}")
        buf = []
        for sample in reader():
            buf.append(sample)
            if len(buf) == buf_size:
                rng.shuffle(buf)
                yield from buf
                buf = []
        rng.shuffle(buf)
        yield from buf

    return shuffle_reader


def chain(*readers):
    """The samples of each reader in turn."""

    def chain_reader():
        for r in readers:
            yield from r()

    return chain_reader


def _as_tuple(sample):
    return tuple(sample) if isinstance(sample, tuple) else (sample,)


def compose(*readers, check_alignment=True):
    """Zips the readers: each sample is the concatenation of one sample of
    each (a tuple sample contributes its entries, anything else itself),
    e.g. readers of (a,) and (b, c) give (a, b, c). With `check_alignment`,
    readers that end at different samples raise ComposeNotAligned;
    without, the shortest ends the composition."""

    def compose_reader():
        iters = [iter(r()) for r in readers]
        index = 0
        while True:
            parts, ended = [], []
            for i, it in enumerate(iters):
                try:
                    parts.append(next(it))
                except StopIteration:
                    ended.append(i)
            if ended:
                if check_alignment and len(ended) != len(iters):
                    raise ComposeNotAligned(
                        f"compose: reader(s) {ended} ended after {index} "
                        f"samples, the other(s) have more")
                return
            yield sum((_as_tuple(p) for p in parts), ())
            index += 1

    return compose_reader


def firstn(reader, n):
    """The first `n` samples of `reader` (fewer if it has fewer)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"firstn: n must be an int >= 0, got {n!r}")

    def firstn_reader():
        yield from itertools.islice(reader(), n)

    return firstn_reader


def map_readers(func, *readers):
    """func(sample_1, ..., sample_k) over the readers side by side, ending
    with the shortest."""

    def map_reader():
        yield from map(func, *[r() for r in readers])

    return map_reader


class _Failure:
    """An exception raised in a helper thread, carried to the consumer."""

    def __init__(self, error):
        self.error = error


_END = object()


def _put(q, item, stop):
    """Puts `item` unless `stop` is set first (the consumer went away)."""
    while not stop.is_set():
        try:
            q.put(item, timeout=0.05)
            return True
        except queue.Full:
            pass
    return False


def _start(name, target, *args):
    t = threading.Thread(target=target, args=args, daemon=True,
                         name=f"fluid.io.{name}")
    t.start()
    return t


def buffered(reader, size):
    """Reads `reader` ahead in a thread, keeping up to `size` samples
    ready."""
    _positive_int(size, "buffered: size")

    def fill(q, stop):
        try:
            for sample in reader():
                if not _put(q, sample, stop):
                    return
            _put(q, _END, stop)
        except BaseException as e:  # noqa: B902  (re-raised by the consumer)
            _put(q, _Failure(e), stop)

    def buffered_reader():
        q, stop = queue.Queue(maxsize=size), threading.Event()
        _start("buffered", fill, q, stop)
        try:
            while True:
                item = q.get()
                if item is _END:
                    return
                if isinstance(item, _Failure):
                    raise item.error
                yield item
        finally:
            stop.set()

    return buffered_reader


def xmap_readers(mapper, reader, process_num, buffer_size, order=False):
    """mapper(sample) for each sample of `reader`, computed by
    `process_num` threads, with up to `buffer_size` samples queued on the
    way in and out. With `order` the results come in the reader's order,
    otherwise as they are ready."""
    _positive_int(process_num, "xmap_readers: process_num")
    _positive_int(buffer_size, "xmap_readers: buffer_size")

    def read(inq, outq, stop):
        try:
            for item in enumerate(reader()):
                if not _put(inq, item, stop):
                    return
        except BaseException as e:  # noqa: B902
            _put(outq, _Failure(e), stop)
        for _ in range(process_num):
            _put(inq, _END, stop)

    def work(inq, outq, stop):
        while not stop.is_set():
            try:
                item = inq.get(timeout=0.05)
            except queue.Empty:
                continue
            if item is _END:
                _put(outq, _END, stop)
                return
            index, sample = item
            try:
                result = (index, mapper(sample))
            except BaseException as e:  # noqa: B902
                result = _Failure(e)
            if not _put(outq, result, stop):
                return

    def xmap_reader():
        inq = queue.Queue(maxsize=buffer_size)
        outq = queue.Queue(maxsize=buffer_size)
        stop = threading.Event()
        _start("xmap_readers", read, inq, outq, stop)
        for _ in range(process_num):
            _start("xmap_readers", work, inq, outq, stop)
        pending, next_index, running = {}, 0, process_num
        try:
            while running:
                item = outq.get()
                if item is _END:
                    running -= 1
                    continue
                if isinstance(item, _Failure):
                    raise item.error
                if not order:
                    yield item[1]
                    continue
                pending[item[0]] = item[1]
                while next_index in pending:
                    yield pending.pop(next_index)
                    next_index += 1
        finally:
            stop.set()

    return xmap_reader


# Ranks per tensor-parallel group, and stages of a pipeline: the ranks of
# one group split each batch's layers, the stages of one pipeline its
# model, not the batches, so they read the same data (MPIExecutor sets
# both from its strategy, PipelineOptimizer the stages from its program).
_tensor_parallel = [1]
_pipeline = [1]


def _set_tensor_parallel(ranks):
    _tensor_parallel[0] = max(int(ranks), 1)


def _set_pipeline(stages):
    _pipeline[0] = max(int(stages), 1)


def _data_ranks():
    """(rank, world) of this process among the readers of distinct data:
    one per data-parallel position. Ranks are laid out [stage][data
    parallel][tensor parallel] (transpiler/pipeline.h), so the launcher's
    rank r reads as data-parallel rank (r // tp) % dp of dp = world //
    (tp * stages)."""
    tp = _tensor_parallel[0]
    world = max(_core.launcher_world_size() // (tp * _pipeline[0]), 1)
    return (_core.launcher_rank() // tp) % world, world


def shard(reader, rank=None, world_size=None):
    """This rank's part of `reader`: of each run of `world_size`
    consecutive samples (or batches), the one at position `rank`. A final
    run shorter than `world_size` is dropped, so every rank gets exactly
    floor(n / world_size) of the n items, and in collective training no
    rank runs out before the others (at most world_size - 1 items per pass
    go unused; shuffle first, with the same seed on every rank, to vary
    which).

    `rank` and `world_size` default to the MPI launcher's (the
    OMPI_COMM_WORLD_RANK / _SIZE, PMI_RANK / PMI_SIZE, PMIX_RANK variables
    that MPIExecutor also reads; rank 0 of 1 without a launcher).

    Sharding batches (shard(batch(r, B), ...)) gives whole batches; with
    drop_last=False the last, short batch may go to one rank, so shard
    samples before batching, or batch with drop_last=True, when every
    step must see full batches."""
    if world_size is None:
        world_size = _data_ranks()[1]
    if rank is None:
        rank = _data_ranks()[0]
    _positive_int(world_size, "shard: world_size")
    if isinstance(rank, bool) or not isinstance(rank, int) or \
            not 0 <= rank < world_size:
        raise ValueError(f"shard: rank must be an int in [0, {world_size}), "
                         f"got {rank!r}")

    def shard_reader():
        for position, item in enumerate(reader()):
            if position % world_size == rank:
                mine = item
            if position % world_size == world_size - 1:
                yield mine

    return shard_reader


def cache(reader):
    """`reader`'s samples, read once and kept in memory: every pass after
    the first replays them."""
    kept = []
    state = {"complete": False}

    def cached_reader():
        if state["complete"]:
            yield from kept
            return
        kept.clear()
        for item in reader():
            kept.append(item)
            yield item
        state["complete"] = True

    return cached_reader


_END = "__fluid_reader_end__"


def _produce(reader, out):
    """In a child process: every sample of `reader` into `out`, then an end
    marker, or the error's text."""
    try:
        for item in reader():
            out.put(item)
        out.put((_END, None))
    except BaseException:  # the parent re-raises it with this text
        out.put((_END, traceback.format_exc()))


def multiprocess_reader(readers, use_pipe=True, queue_size=1000):
    """The samples of every reader in `readers`, each read in a process of
    its own (forked: the readers need not be picklable, their samples
    must), interleaved as they come, with up to `queue_size` queued. A
    reader's error is raised in the consumer with the child's traceback;
    stopping early ends the children. `use_pipe` is accepted for Fluid's
    signature (a queue is used either way)."""
    if not isinstance(readers, (list, tuple)) or not readers:
        raise ValueError("multiprocess_reader(readers=...): a non-empty list "
                         "of reader creators")
    _positive_int(queue_size, "multiprocess_reader: queue_size")

    def multiprocess():
        ctx = multiprocessing.get_context("fork")
        out = ctx.Queue(queue_size)
        children = [ctx.Process(target=_produce, args=(r, out), daemon=True)
                    for r in readers]
        for c in children:
            c.start()
        running = len(children)
        try:
            while running:
                item = out.get()
                if isinstance(item, tuple) and len(item) == 2 and \
                        isinstance(item[0], str) and item[0] == _END:
                    running -= 1
                    if item[1] is not None:
                        raise RuntimeError("multiprocess_reader: a reader "
                                           "failed in its process:\n" +
                                           item[1])
                    continue
                yield item
        finally:
            for c in children:
                if c.is_alive():
                    c.terminate()
                c.join()

    return multiprocess
