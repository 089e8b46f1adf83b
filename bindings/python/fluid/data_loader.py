"""Fluid 1.x's data loaders: fluid.io.DataLoader.from_generator, and
fluid.io.PyReader (fluid.layers.py_reader builds on the same machinery, in
layers_io.py).

A loader turns a Python generator into the feeds of Executor.run:

- a *sample generator* (set_sample_generator): samples, batched here;
- a *sample-list generator* (set_sample_list_generator): lists of samples,
  e.g. what fluid.io.batch yields;
- a *batch generator* (set_batch_generator): one array (or LoDTensor) per
  feed variable per batch.

Samples are converted as fluid.DataFeeder converts them (dtype, per-sample
shape, sequences of lod_level=1 slots packed into a LoDTensor).

Iterable (iterable=True): `for data in loader(): exe.run(prog, feed=data)`;
`data` is a list with one {name: LoDTensor} dict per place (one place per
process here), or with return_list=True one list of LoDTensors per place.

Non-iterable (iterable=False): `loader.start()`, then `exe.run(prog)` with
no feed: the executor takes the next batch from the started loader of the
program it runs (feed_for_run, called by Executor.run and MPIExecutor.run),
until the pass ends with fluid.core.EOFException; then `loader.reset()`.

use_double_buffer=True: a thread reads and converts the next batches (up to
`capacity`) while the current step runs; False: each batch is read when
the executor asks for it. Both yield the same batches in the same order.
An exception raised by the generator is raised again in the consumer, with
its traceback, after the batches read before it. A pass stopped early (a
`break`, reset()) stops its thread; threads left at exit are stopped then.

Under an MPI launcher with N ranks each rank takes its part of the
generator's batches, as fluid.io.shard does: of each run of N consecutive
batches, the one at its rank's position. Every rank reads the whole
generator, so the generator must yield the same batches on every rank.
Each rank gets floor(n / N) of the n batches; the remainder (fewer than N
batches at the end of a pass) is dropped with drop_last=True (the default
of from_generator), or with drop_last=False goes to ranks 0..r-1, which is
for evaluation only (a training program run on it raises ValueError on
every rank, instead of waiting in a collective for the ranks without one).
The keyword shard=False of the set_* / decorate_* methods turns this off
for a generator that already yields this rank's part; a reader built with
fluid.io.shard is never sharded again.
"""
import threading
import weakref

from ._data_pass import (_END, _flag, _InlinePass, _positive_int, _Source,
                         _ThreadPass)
from .framework import Variable

__all__ = ["DataLoader", "EOFException", "GeneratorLoader", "PyReader"]


class EOFException(Exception):
    """The started reader of a program has no more data: the pass is over.
    Raised by Executor.run (fluid.core.EOFException, as in Fluid); call the
    loader's reset(), then start() for the next pass."""


def _check_places(places, who):
    """One place, or None: a process runs one place here."""
    from .executor import CPUPlace, CUDAPlace  # executor imports this module
    if places is None or isinstance(places, (CPUPlace, CUDAPlace)):
        return
    if isinstance(places, (list, tuple)):
        if len(places) == 1 and isinstance(places[0], (CPUPlace, CUDAPlace)):
            return
        if len(places) > 1:
            raise ValueError(
                f"{who}: places holds {len(places)} places; a process runs "
                "one place here: data parallelism is by MPI ranks, one "
                "process per device (mpirun with fluid.MPIExecutor, each "
                "rank passing its own place, e.g. fluid.CUDAPlace())")
    raise ValueError(f"{who}: places must be a fluid.CPUPlace or "
                     f"fluid.CUDAPlace (or a list of one), got {places!r}")


def _reader_creator(reader, who):
    if callable(reader):
        return reader
    hint = " (pass the function, not the generator it returns)" \
        if hasattr(reader, "__next__") else ""
    raise ValueError(f"{who}: the reader must be a callable returning an "
                     f"iterable (a generator function){hint}, got "
                     f"{type(reader).__name__}")


# Non-iterable loaders, which Executor.run may read from.
_non_iterable = weakref.WeakSet()
# Started non-iterable loaders (kept alive until reset).
_started = set()
_registry_lock = threading.Lock()


class _Loader:
    """What every loader shares: the feed variables, the queue's capacity,
    the double buffer, iterable or not, and the data source; iteration
    (iterable) or start/reset and the executor's reads (non-iterable)."""

    def __init__(self, who, feed_list, capacity, use_double_buffer,
                 iterable, return_list, drop_last=True):
        self._who = who
        self._feed_vars = self._check_feed_list(feed_list)
        self._names = [v.name for v in self._feed_vars]
        self._capacity = _positive_int(
            capacity, f"{who}: capacity (the batches its queue holds)")
        self._double_buffer = _flag(use_double_buffer,
                                    f"{who}: use_double_buffer")
        self._iterable = _flag(iterable, f"{who}: iterable")
        self._return_list = _flag(return_list, f"{who}: return_list")
        self._drop_last = _flag(drop_last, f"{who}: drop_last")
        self._source = None
        self._pass = None        # the pass being read
        self._state = "idle"     # non-iterable: idle, running or exhausted
        self._lock = threading.RLock()
        # The program that reads from a non-iterable loader: the one its
        # variables were declared in (Fluid adds its read op there).
        self._program = self._feed_vars[0].program
        if not self._iterable:
            with _registry_lock:
                _non_iterable.add(self)

    def _check_feed_list(self, feed_list):
        if feed_list is None:
            raise ValueError(
                f"{self._who}: feed_list is required: the data Variables "
                "(fluid.layers.data) the loader feeds, in the order of each "
                "sample's (or batch's) entries")
        if isinstance(feed_list, Variable):
            feed_list = [feed_list]
        if not isinstance(feed_list, (list, tuple)) or not feed_list:
            raise ValueError(f"{self._who}: feed_list must be a non-empty "
                             f"list of Variables, got {feed_list!r}")
        for v in feed_list:
            if not isinstance(v, Variable):
                raise ValueError(
                    f"{self._who}: feed_list takes Variables "
                    f"(fluid.layers.data), got {type(v).__name__} {v!r}")
        names = [v.name for v in feed_list]
        if len(set(names)) != len(names):
            raise ValueError(f"{self._who}: feed_list names a variable "
                             f"twice: {names}")
        return list(feed_list)

    @property
    def iterable(self):
        """True when the loader is iterated (`for data in loader()`),
        False when it is started and read by Executor.run."""
        return self._iterable

    def _set_source(self, kind, reader, places, who, batch_size=None,
                    drop_last=True, shard=None):
        reader = _reader_creator(reader, who)
        _check_places(places, who)
        if kind == "sample":
            batch_size = _positive_int(batch_size, f"{who}: batch_size")
            drop_last = _flag(drop_last, f"{who}: drop_last")
        with self._lock:
            if self._state != "idle":
                raise ValueError(f"{who}: the loader is started; call "
                                 "reset() before setting its data source")
            self._source = _Source(kind, reader, self._feed_vars, batch_size,
                                   drop_last, shard)
        return self

    def _open(self):
        """A new pass over the source; the previous one, if any, ends."""
        if self._source is None:
            raise ValueError(
                f"{self._who}: no data source: set one first (the "
                "set_sample_generator, set_sample_list_generator or "
                "set_batch_generator of a DataLoader; the decorate_* "
                "methods of a PyReader or py_reader)")
        if self._pass is not None:
            self._pass.close()
        items = self._source.items(self._drop_last)
        self._pass = _ThreadPass(items, self._capacity) \
            if self._double_buffer else _InlinePass(items)
        return self._pass

    # ---- iterable mode

    def __call__(self):
        """A new pass (iterable loaders): yields, per batch, a list with one
        {name: LoDTensor} dict (return_list=True: one list of LoDTensors,
        in feed_list order) per place; one place per process here."""
        if not self._iterable:
            raise ValueError(
                f"{self._who}: this loader was created with iterable=False: "
                "call start(), run the program with no feed until "
                "fluid.core.EOFException, then reset(); or create it with "
                "iterable=True to iterate it")
        if self._source is None:
            self._open()  # raises, naming the set_* methods
        return self._iterate()

    def __iter__(self):
        return self()

    def _iterate(self):
        # The pass (and its thread) starts at the first next(): a
        # generator never started would never run its finally.
        with self._lock:
            p = self._open()
        try:
            while True:
                item = p.get()
                if item is _END or item[0] is None:
                    return
                feed = item[0]
                if self._return_list:
                    yield [[feed[n] for n in self._names]]
                else:
                    yield [feed]
        finally:
            p.close()
            with self._lock:
                if self._pass is p:
                    self._pass = None

    # ---- non-iterable mode

    def start(self):
        """Starts a pass (non-iterable loaders): from now on, a run of the
        program with no feed reads the next batch, until the pass ends
        with fluid.core.EOFException."""
        if self._iterable:
            raise ValueError(
                f"{self._who}: start() is for loaders created with "
                "iterable=False; iterate this one: for data in loader(): "
                "exe.run(program, feed=data, ...)")
        with self._lock:
            if self._state != "idle":
                raise ValueError(
                    f"{self._who}: start() called again before reset(): "
                    "after fluid.core.EOFException (or to stop a pass "
                    "early) call reset(), then start()")
            self._open()
            self._state = "running"
        with _registry_lock:
            _started.add(self)

    def reset(self):
        """Ends the pass (after fluid.core.EOFException, or early): its
        thread stops; start() begins the next pass."""
        with self._lock:
            if self._pass is not None:
                self._pass.close()
                self._pass = None
            self._state = "idle"
        with _registry_lock:
            _started.discard(self)

    def _eof(self):
        self._state = "exhausted"
        return EOFException(
            f"{self._who} of {', '.join(self._names)}: no more data, the "
            "pass is over; call reset(), then start() for the next pass")

    def _next_feed(self, training_on_ranks):
        """The next batch for a run of the program (non-iterable)."""
        with self._lock:
            if self._state != "running":
                raise self._eof()
            try:
                item = self._pass.get()
            except BaseException:
                self._state = "exhausted"
                raise
            if item is _END:
                raise self._eof()
            feed, short = item
            if short and training_on_ranks():
                self._state = "exhausted"
                raise _remainder_error(self._who)
            if feed is None:
                raise self._eof()
            return feed


def _remainder_error(who):
    return ValueError(
        f"{who}: drop_last=False gave this pass's last batches (fewer than "
        "the ranks) to some ranks only, and a training program cannot run "
        "on some ranks: the others would wait for them in its collectives. "
        "Use drop_last=True (the default) for training; drop_last=False is "
        "for evaluation programs")


class GeneratorLoader(_Loader):
    """What DataLoader.from_generator returns: set its data source with
    set_sample_generator, set_sample_list_generator or
    set_batch_generator, then iterate it (iterable=True) or start() it
    (iterable=False). See the module's docstring."""

    def __init__(self, feed_list=None, capacity=None, use_double_buffer=True,
                 iterable=True, return_list=False, use_multiprocess=False,
                 drop_last=True):
        # use_multiprocess is for Fluid's dygraph mode: accepted, unused.
        _flag(use_multiprocess, "DataLoader: use_multiprocess")
        super().__init__("DataLoader", feed_list, capacity,
                         use_double_buffer, iterable, return_list, drop_last)

    def set_sample_generator(self, reader, batch_size, drop_last=True,
                             places=None, *, shard=None):
        """reader: a callable returning an iterable of samples (each a
        tuple with one entry per feed variable). Batches of `batch_size`
        samples; the last, shorter one is dropped when drop_last. shard:
        None (default) shards this rank's batches under an MPI launcher
        unless the reader is built on fluid.io.shard; False never."""
        return self._set_source("sample", reader, places,
                                "DataLoader.set_sample_generator",
                                batch_size, drop_last, shard)

    def set_sample_list_generator(self, reader, places=None, *, shard=None):
        """reader: a callable returning an iterable of lists of samples
        (e.g. fluid.io.batch(...)), each list one batch. shard: as
        set_sample_generator's."""
        return self._set_source("sample_list", reader, places,
                                "DataLoader.set_sample_list_generator",
                                shard=shard)

    def set_batch_generator(self, reader, places=None, *, shard=None):
        """reader: a callable returning an iterable of batches, each a
        tuple or list with one value per feed variable: an array (batch
        first, of the variable's dtype), a fluid.LoDTensor or a (values,
        lengths) pair for a sequence variable. shard: as
        set_sample_generator's."""
        return self._set_source("batch", reader, places,
                                "DataLoader.set_batch_generator",
                                shard=shard)


class DataLoader:
    """fluid.io.DataLoader: DataLoader.from_generator(...) creates a
    loader over a Python generator."""

    @staticmethod
    def from_generator(feed_list=None, capacity=None, use_double_buffer=True,
                       iterable=True, return_list=False,
                       use_multiprocess=False, drop_last=True):
        """A GeneratorLoader feeding `feed_list` (data Variables).

        capacity: the batches its queue holds (read ahead by the double
        buffer's thread). use_double_buffer: read and convert the next
        batches in a thread while the program runs. iterable: True to
        iterate (`for data in loader()`), False for start()/reset() with
        Executor.run reading the batches. return_list: yield lists of
        LoDTensors instead of {name: LoDTensor} dicts (iterable only).
        use_multiprocess: Fluid's dygraph option; no effect here.
        drop_last: under N ranks, drop the last batches of a pass that
        cannot give every rank one (False: they go to the first ranks, for
        evaluation)."""
        return GeneratorLoader(feed_list, capacity, use_double_buffer,
                               iterable, return_list, use_multiprocess,
                               drop_last)

    @staticmethod
    def from_dataset(dataset, places, drop_last=True):
        """Fluid's loader over a fluid.Dataset (InMemoryDataset,
        QueueDataset): not part of this product."""
        raise NotImplementedError(
            "DataLoader.from_dataset: fluid.Dataset is not part of this "
            "product; read the files in a Python generator and use "
            "DataLoader.from_generator (set_sample_generator, ...)")


class PyReader(_Loader):
    """fluid.io.PyReader(feed_list=None, capacity=None,
    use_double_buffer=True, iterable=True, return_list=False): Fluid 1.5's
    loader, the same as DataLoader.from_generator's with the decorate_*
    names for the data source."""

    def __init__(self, feed_list=None, capacity=None, use_double_buffer=True,
                 iterable=True, return_list=False):
        super().__init__("PyReader", feed_list, capacity, use_double_buffer,
                         iterable, return_list)

    def decorate_sample_generator(self, sample_generator, batch_size,
                                  drop_last=True, places=None, *, shard=None):
        """As GeneratorLoader.set_sample_generator."""
        return self._set_source("sample", sample_generator, places,
                                "PyReader.decorate_sample_generator",
                                batch_size, drop_last, shard)

    def decorate_sample_list_generator(self, reader, places=None, *,
                                       shard=None):
        """As GeneratorLoader.set_sample_list_generator."""
        return self._set_source("sample_list", reader, places,
                                "PyReader.decorate_sample_list_generator",
                                shard=shard)

    def decorate_batch_generator(self, reader, places=None, *, shard=None):
        """As GeneratorLoader.set_batch_generator."""
        return self._set_source("batch", reader, places,
                                "PyReader.decorate_batch_generator",
                                shard=shard)


def _one_place(feed):
    """The feed dict of a list of one dict per place (what an iterable
    loader yields)."""
    if len(feed) == 1 and isinstance(feed[0], dict):
        return feed[0]
    if len(feed) > 1:
        raise ValueError(
            f"run: feed holds {len(feed)} entries (one per place); a "
            "process runs one place here: data parallelism is by MPI ranks "
            "(mpirun with fluid.MPIExecutor), each feeding its own batch")
    got = type(feed[0]).__name__ if feed else "an empty list"
    raise ValueError(
        f"run: feed must be a {{name: value}} dict, or a list of one (what "
        f"a DataLoader yields), got a list of {got}; a loader created with "
        "return_list=True yields values without names: feed "
        "dict(zip(names, values)), or create it with return_list=False")


def _fed_names(feed):
    return {k.name if isinstance(k, Variable) else str(k)
            for k in (feed or {})}


def _loader_of(program, feed):
    """The started non-iterable loader a run of `program` reads from, when
    `feed` gives none of its variables: the program's own (its variables
    were declared there), or one whose variables it declares (a clone)."""
    fed = _fed_names(feed)
    with _registry_lock:
        loaders = [l for l in _non_iterable if not fed & set(l._names)]
    # A program with loaders of its own reads from those only.
    loaders = [l for l in loaders if l._program is program] or [
        l for l in loaders
        if all(program.desc.has_var(n) for n in l._names)]
    started = [l for l in loaders if l._state != "idle"]
    if len(started) > 1:
        raise ValueError(
            "run: several started loaders feed this program (of "
            f"{'; '.join(', '.join(l._names) for l in started)}); reset() "
            "the ones it does not read from")
    if started:
        return started[0]
    own = [l for l in loaders if l._program is program]
    if not feed and own:
        raise ValueError(
            f"run: the program reads {', '.join(own[0]._names)} from a "
            "loader (iterable=False) that is not started: call its start() "
            "before running the program (and again after each reset()), or "
            "feed the variables")
    return None


def feed_for_run(program, feed, world_size):
    """The feed of a run of `program` (Executor.run and MPIExecutor.run
    call this first): a list of one dict per place becomes its dict, and,
    when a started non-iterable loader feeds the program and `feed` gives
    none of its variables, its next batch is added (EOFException at the
    end of its pass). `world_size`: the executor's ranks; a training
    program cannot run on a remainder batch only some of them have."""
    if isinstance(feed, (list, tuple)):
        feed = _one_place(feed)
    with _registry_lock:
        any_loader = bool(_non_iterable)
    loader = _loader_of(program, feed) if any_loader else None

    def training_on_ranks():
        return world_size > 1 and program.desc.is_training()

    if loader is not None:
        batch = loader._next_feed(training_on_ranks)
        if not feed:
            return batch
        merged = dict(feed)
        merged.update(batch)
        return merged
    if getattr(feed, "short", False) and training_on_ranks():
        raise _remainder_error("DataLoader")
    return feed
