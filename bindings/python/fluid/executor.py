"""Executors. Executor runs a program in this process; MPIExecutor runs the
same scripts data-parallel when launched as `mpirun -np N python train.py`:
it transpiles the program for the world size on first use (allreduce of the
gradients before the optimizer), checks all ranks hold the same program,
and broadcasts rank 0's parameters."""
import atexit
import contextlib
import logging
import os
import threading
import warnings
import weakref

import numpy as np

from . import _core
from . import _job
from . import data_loader as _data_loader
from . import lod_tensor as _lod_tensor
from . import optimizer as _optimizer
from . import reader as _reader
from . import transpiler as _transpiler
from .distributed_strategy import DistributedStrategy
from .distributed_strategy import _from_legacy as _strategy_from_legacy
from .framework import Program, default_main_program

_log = logging.getLogger("fluid")


class CPUPlace:
    def __repr__(self):
        return "CPUPlace()"


class CUDAPlace:
    """A CUDA device. CUDAPlace(i) is device i; CUDAPlace() is the device of
    this process's node-local rank under mpirun (modulo the visible device
    count), device 0 otherwise, which is what a data-parallel script wants
    on every rank."""

    def __init__(self, device_id=None):
        self.device_id = device_id

    def __repr__(self):
        return "CUDAPlace()" if self.device_id is None else \
            f"CUDAPlace({self.device_id})"


def is_compiled_with_cuda():
    """True when the native core was built with the CUDA path."""
    return _core.built_with_cuda()


def cuda_device_count():
    """CUDA devices visible to this process (0 without CUDA or a GPU)."""
    return _core.cuda_device_count()


def _device_of(place):
    """The native device index for `place`: -1 for the CPU. A CUDA place
    that cannot be used raises NotImplementedError (no CUDA in this build,
    or no device visible) or ValueError (no such device), naming why."""
    if place is None or isinstance(place, CPUPlace):
        return -1
    if not isinstance(place, CUDAPlace):
        raise TypeError(f"place must be CPUPlace or CUDAPlace, got {place!r}")
    if not _core.built_with_cuda():
        raise NotImplementedError(
            f"{place!r}: this build has no CUDA (configure with WITH_CUDA=ON)")
    count = _core.cuda_device_count()
    if count == 0:
        raise NotImplementedError(f"{place!r}: no CUDA device is visible")
    device = _core.local_rank_device() if place.device_id is None \
        else int(place.device_id)
    if not 0 <= device < count:
        raise ValueError(f"{place!r}: {count} CUDA device(s) visible "
                         f"(0..{count - 1})")
    return device


class Scope:
    """Variables by name; parameters live here across runs."""

    def __init__(self):
        # Reads and writes wait for what a run left in flight on the scope
        # (overlapped parameter gathers): the native scope's fence.
        self._core = _core.Scope()

    def var_names(self):
        return self._core.var_names()

    def find_var(self, name):
        """The scope's variable `name` (None when it has none), as Fluid
        gives it: `find_var(name).get_tensor()` reads and sets its value."""
        return ScopeVariable(self, name) if self._core.has(name) else None

    def get(self, name):
        return self._core.get(name)

    def set(self, name, value):
        self._core.set(name, np.asarray(value))


class ScopeVariable:
    """A variable of a Scope; `get_tensor()` is its value."""

    def __init__(self, scope, name):
        self._scope, self.name = scope, name

    def get_tensor(self):
        return ScopeTensor(self._scope, self.name)


class ScopeTensor:
    """The value of a scope's variable, array-like: `np.array(t)` copies it
    out, `t.set(array, place)` writes it (to the variable's device), and
    `t.shape()` is its shape."""

    def __init__(self, scope, name):
        self._scope, self._name = scope, name

    def __array__(self, dtype=None):
        value = self._scope.get(self._name)
        return value if dtype is None else value.astype(dtype)

    def shape(self):
        return list(self._scope.get(self._name).shape)

    def set(self, value, place=None):
        self._scope.set(self._name, value)

    def __repr__(self):
        return f"ScopeTensor({self._name!r}, shape={self.shape()})"


_global_scope = Scope()


def global_scope():
    return _global_scope


@contextlib.contextmanager
def scope_guard(scope):
    """Makes `scope` the global scope (what executors and fluid.io use by
    default) inside the `with` block, as fluid.scope_guard does."""
    if not isinstance(scope, Scope):
        raise TypeError(f"scope_guard: expected a fluid.Scope, got "
                        f"{type(scope).__name__}")
    global _global_scope
    saved, _global_scope = _global_scope, scope
    try:
        yield
    finally:
        _global_scope = saved


def _names(fetch_list):
    return [f.name if hasattr(f, "name") else str(f) for f in fetch_list or []]


def _feed(feed):
    out = {}
    for k, v in (feed or {}).items():
        name = k.name if hasattr(k, "name") else str(k)
        out[name] = _lod_tensor.feed_value(name, v)
    return out


class IndependentRanksWarning(UserWarning):
    """A plain Executor trains a program under an MPI launcher: each rank
    trains on its own and the ranks' parameters drift apart."""


# Ranks the MPI launcher started this process among (1 without one).
_LAUNCHED_RANKS = _core.launcher_world_size()
_independent_warned = False


def _warn_if_independent_ranks(steps):
    """Once per process, on rank 0: a training program run by a plain
    Executor in a process that mpirun started as one of several ranks."""
    global _independent_warned
    if _independent_warned or _LAUNCHED_RANKS <= 1 or not steps.training:
        return
    _independent_warned = True
    if os.environ.get("FLUID_INDEPENDENT_RANKS") == "1":
        return
    if _core.launcher_rank() != 0:
        return
    warnings.warn(
        f"fluid.Executor trains this process on its own, but it is rank 0 "
        f"of {_LAUNCHED_RANKS} started by an MPI launcher: a "
        "plain Executor averages no gradients, so every rank's parameters "
        "drift apart. For data-parallel training run the program with "
        "fluid.MPIExecutor, or give this Executor a data-parallel program "
        "(fluid.CompiledProgram(program).with_data_parallel(), or a "
        "DistributeTranspiler trainer program); "
        "set FLUID_INDEPENDENT_RANKS=1 if independent ranks are meant.",
        IndependentRanksWarning, stacklevel=3)


class _Steps:
    """Per prepared program (and scope): how many times it ran, whether it
    trains, and what check_finite looks at by default (the losses a training
    program differentiates). Read from the program once, not every run."""

    def __init__(self, program):
        self.count = 0
        self.skipped = 0  # steps fp16 loss scaling skipped
        self.training = program.desc.is_training()
        self.losses = set(program.desc.loss_vars()) if self.training \
            else set()

    @staticmethod
    def of(table, program, scope):
        key = (program.desc.id, program.desc.version, id(scope))
        steps = table.get(key)
        if steps is None:
            steps = table[key] = _Steps(program)
        return steps


def _skipped_by_loss_scaling(amp, scope, steps):
    """Whether the step just run was skipped by fp16's dynamic loss scaling
    (its gradients overflowed: the update was skipped and the scale
    lowered; not an error). Counts it in steps.skipped and logs it."""
    if not amp or not scope._core.has("found_infinite"):
        return False
    # Gradient merge: a run that only accumulated (its counter not back at
    # 0) updated nothing; an overflow in it skips the merged step it
    # belongs to, which is reported when it closes.
    merge = "@GRAD_MERGE_STEP@"
    if scope._core.has(merge) and \
            int(np.asarray(scope._core.get(merge)).ravel()[0]) != 0:
        return True
    if int(np.asarray(scope._core.get("found_infinite")).ravel()[0]) == 0:
        return False
    steps.skipped += 1
    scale = (float(np.asarray(scope._core.get("loss_scaling")).ravel()[0])
             if scope._core.has("loss_scaling") else float("nan"))
    _log.warning("step %d: the fp16 gradients overflowed; the update was "
                 "skipped and the loss scaling is now %g (%d step(s) "
                 "skipped so far)", steps.count, scale, steps.skipped)
    return True


def _check_finite(names, values, watched, step, where=""):
    """Raises FloatingPointError for the first fetched value in `watched`
    (all floating fetches when watched is None) holding NaN or Inf."""
    for name, value in zip(names, values):
        if watched is not None and name not in watched:
            continue
        if value.dtype.kind != "f" or np.isfinite(value).all():
            continue
        bad = value[~np.isfinite(value)].ravel()[0]
        raise FloatingPointError(
            f"step {step}: '{name}' is {bad}{where}: training diverged "
            "(a lower learning rate or gradient clipping usually helps); "
            "run(..., check_finite=False) returns such values unchecked")


class Executor:
    """Runs programs in this process. `run` calls are serialised: several
    threads may share one executor, one run at a time."""

    def __init__(self, place=None, threads=1):
        device = _device_of(place)
        self.place = place or CPUPlace()
        self._threads = int(threads)
        self._core = _core.Executor(int(threads), device)
        # scope id -> the MPIExecutor running this executor's data-parallel
        # programs on it (fluid.compiler._run_on_ranks)
        self._rank_runners = {}
        # Prepared programs point into the scopes they ran on: keep those
        # scopes alive as long as this executor.
        self._scopes = {}
        self._steps = {}
        self._lock = threading.Lock()
        self._closed = False

    def close(self):
        """Releases the prepared programs and the scopes they hold; the
        executor cannot run afterwards."""
        with self._lock:
            self._closed = True
            # The prepared programs first: they point into the scopes.
            self._core = None
            self._rank_runners.clear()
            self._steps.clear()
            self._scopes.clear()

    def _check_open(self):
        if self._closed:
            raise RuntimeError("this Executor was closed (Executor.close()); "
                               "make a new one")

    def run(self, program=None, feed=None, fetch_list=None, scope=None,
            check_finite=None, return_numpy=True, use_program_cache=False,
            feed_var_name="feed", fetch_var_name="fetch"):
        """Runs `program` (default: the default main program) once; returns
        the fetched values as NumPy arrays, in fetch_list order.

        check_finite: None (default) raises FloatingPointError when a
        fetched loss of a training program holds NaN or Inf; True checks
        every floating fetch; False checks nothing.

        A feed of a sequence batch (a data variable with lod_level=1) is a
        fluid.LoDTensor (fluid.create_lod_tensor) or a (values, lengths)
        pair; a fetched sequence batch is its packed values.
        return_numpy=False returns every fetch as a fluid.LoDTensor, as
        Fluid does (`np.array(t)`, `t.shape()`, `t.lod()`,
        `t.recursive_sequence_lengths()`: [] for a dense value).

        Fluid's use_program_cache, feed_var_name and fetch_var_name are
        accepted: a program is always prepared once per scope and reused,
        and feeds and fetches are named by their variables."""
        self._check_open()
        from . import compiler  # a CompiledProgram runs through its module
        handed = compiler._dispatch(self, program, feed, fetch_list, scope,
                                    check_finite, return_numpy)
        if handed is not None:
            return handed
        program = program or default_main_program()
        # A started DataLoader/py_reader of the program gives the feed.
        feed = _data_loader.feed_for_run(program, feed, 1)
        scope = scope or global_scope()
        names = _names(fetch_list)
        with self._lock:
            self._scopes[id(scope)] = scope
            steps = _Steps.of(self._steps, program, scope)
            _warn_if_independent_ranks(steps)
            # srun tasks that know no peers would each train alone.
            why = _job.tasks_without_pmi_refusal() if steps.training else ""
            if why:
                raise ValueError(why)
            fetched = list(self._core.run(program.desc, scope._core,
                                          _feed(feed), names))
            steps.count += 1
        out = [_lod_tensor.fetched_value(v) for v in fetched]
        skipped = _skipped_by_loss_scaling(
            program.desc.mixed_precision() == "fp16", scope, steps)
        if check_finite is not False and not skipped:
            _check_finite(names, out, None if check_finite else steps.losses,
                          steps.count)
        if not return_numpy:
            return [_lod_tensor.fetched_value(v, False) for v in fetched]
        return out


def _raise_non_finite_gradient(run, step, world_size):
    """Raises FloatingPointError when the averaged gradients of the step
    that `run` (a native MPIExecutor) just took hold NaN or Inf."""
    bad = run.non_finite_gradient()
    if not bad:
        return
    fed = run.non_finite_feeds()
    cause = (f"it came from NaN or Inf fed on {fed}" if fed else
             "no rank was fed NaN or Inf, so training diverged (a lower "
             "learning rate or gradient clipping usually helps)")
    raise FloatingPointError(
        f"step {step}: the averaged gradient '{bad}' holds NaN or Inf on "
        f"all {world_size} rank(s): {cause}; run(..., check_finite=False) "
        "turns this check off")


# The stall watchdog's settings as MPIExecutors gave them: the first one
# made applies the defaults, a later one changes only what it is given
# (so that the MPIExecutor behind a CompiledProgram, a ParallelExecutor or
# fleet keeps what the script set).
_STALL_DEFAULTS = {"stall_warn": 60.0, "stall_timeout": 300.0}
_stall_settings = None


def _configure_stall(stall_warn, stall_timeout, flight_dir):
    """Applies the stall settings given (None: as configured)."""
    global _stall_settings
    given = {}
    for name, value in (("stall_warn", stall_warn),
                        ("stall_timeout", stall_timeout)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not value >= 0:
            raise ValueError(f"MPIExecutor({name}={value!r}): seconds, >= 0 "
                             "(0: never), or None to leave it as configured")
        given[name] = float(value)
    if flight_dir is not None:
        given["flight_dir"] = os.fspath(flight_dir)
        if not given["flight_dir"]:
            raise ValueError("MPIExecutor(flight_dir=''): give a directory, "
                             "or None to leave it as configured")
    if _stall_settings is not None and not given:
        return
    settings = dict(_stall_settings or _STALL_DEFAULTS)
    settings.update(given)
    _core.configure_stall_watchdog(settings["stall_warn"],
                                   settings["stall_timeout"],
                                   str(given.get("flight_dir", "")))
    settings.pop("flight_dir", None)  # "" above: leave it as it is
    _stall_settings = settings


# (program id, scope id) -> the MPIExecutor that last trained the program on
# the scope (weakly held), for fluid.io's saves and loads: see
# _training_run.
_TRAINING = weakref.WeakValueDictionary()


def _training_run(executor, program, scope):
    """(mpi, run): the fluid.MPIExecutor that trains `program` on `scope`
    and its native executor: `executor` when it is a fluid.MPIExecutor that
    does, else the last MPIExecutor that did (the one behind a data-parallel
    CompiledProgram, a ParallelExecutor or fleet too); (None, None) when
    none has."""
    candidates = [executor] if isinstance(executor, MPIExecutor) else []
    last = _TRAINING.get((program.desc.id, id(scope)))
    if last is not None:
        candidates.append(last)
    for mpi in candidates:
        run = mpi._run_of(program, scope)
        if run is not None:
            return mpi, run
    return None, None


def _made_by(startup):
    """The names of the vars a startup program's ops write."""
    return {n for op in startup.desc.ops()
            for names in op["outputs"].values() for n in names}


class MPIExecutor:
    """Same `run` as Executor, data-parallel across the ranks mpirun
    started (a world of one without mpirun).

    - `run(startup_program)` initialises the scope once, explicitly: every
      rank runs it, then every parameter and optimizer state takes rank 0's
      value. No later run re-runs it. With the strategy's `defer_startup`
      it only records the program, and the first training run on the scope
      runs it transpiled for the training program: under tensor
      parallelism, a pipeline or sharding stage 3 each state is made and
      cut to this rank's part before the next one is made, so a model
      whose whole state does not fit one rank starts. Until then the scope
      holds none of the startup's vars, and a program without optimizer
      ops is refused; values loaded into the scope in between are kept.
    - The first run of a training program (one with optimizer ops) on a
      scope transpiles it for the world size (allreduce-average of the
      gradients before the optimizer) unless it already is, checks that
      every rank holds the same program, and prepares it. It starts from the
      values the scope holds.
    - A program without optimizer ops (`clone(for_test=True)`, an
      evaluation program) runs on this rank alone, without collectives, on
      the current parameters.
    - A parameter-server trainer program (DistributeTranspiler's
      get_trainer_program() in "pserver" mode, Fluid's default) is
      converted on its first run, with the server programs made with it,
      into the collective program for the world size
      (fluid.transpiler.to_collective), then trains like any other; the
      optimizer state its startup left to the servers is initialised then
      (and broadcast from rank 0).
    - `run` calls are serialised, as with Executor.
    - `strategy`, a fluid.DistributedStrategy, says how the ranks share
      the work: gradient buckets and their overlap with the backward pass,
      compression, the allreduce across hosts, batch norm over the global
      batch, optimizer-state sharding (`state_bytes(program)` tells what
      one rank holds), sparse gradients, tensor parallelism, a pipeline
      (the program cut into stages where fluid.pipeline_stage placed its
      ops, or as fluid.optimizer.PipelineOptimizer recorded it). Every
      rank passes the same (compared field by field on the first run, a
      difference naming the field). The keyword arguments of earlier
      releases (bucket_mb=4.0, overlap=True, allreduce="flat", ...) still
      work and override the strategy's fields. With sharding's
      overlapped gathers, reads of the parameters between steps (fetching
      one, `scope.find_var(...).get_tensor()`, fluid.io saves, another
      program run on the scope, `check_consistency`) wait for the
      in-flight gathers first; `wait_parameter_gathers()` does it
      explicitly.
    - `stall_warn`, `stall_timeout`: the trainer's `--stall-warn` and
      `--stall-timeout` (seconds; 0: never): a rank that makes no progress
      while the others wait for it in a collective is named in a warning,
      then the job ends; `flight_dir` is where each rank writes its last
      collectives when the job aborts (None: fluid-flight-<job id> under
      $TMPDIR or /tmp, made then; the abort message names the file).
      They are the process's: None leaves each as configured (the first
      MPIExecutor applies the defaults, 60 and 300), so that the
      MPIExecutor behind a CompiledProgram, a ParallelExecutor or fleet
      keeps what the script set.
    - `timeline` is the trainer's `--timeline`: a file name (every rank
      passes one, the same) where rank 0 writes a Chrome trace-event JSON
      timeline of every rank's ops, collectives, exposed waits and feeds
      (Perfetto, chrome://tracing). It records from here until `close()`
      or the end of the script; collective, like the constructor."""

    def __init__(self, place=None, threads=1, strategy=None,
                 stall_warn=None, stall_timeout=None, flight_dir=None,
                 timeline=None, **settings):
        self._strategy = _strategy_from_legacy("MPIExecutor", strategy,
                                               **settings)
        # A tensor-parallel group's ranks read the same batches, as do the
        # stages of a pipeline.
        _reader._set_tensor_parallel(self._strategy.tensor_parallel_degree)
        if self._strategy._pipeline()[0] > 1:
            _reader._set_pipeline(self._strategy._pipeline()[0])
        why = _job.launch_refusal(place)  # the launch before the place
        if why:
            raise ValueError(why)
        self._device = _device_of(place)
        self.place = place or CPUPlace()
        self._threads = int(threads)
        self._startup = None
        self._started = set()  # ids of scopes a startup program ran on
        # ids of scopes whose startup waits for the first training run
        # (DistributedStrategy.defer_startup)
        self._deferred = set()
        self._local = _core.Executor(self._threads, self._device)
        self._runs = {}  # (program id, version, scope id) -> _core.MPIExecutor
        self._converted = {}  # (program id, version) -> collective pair
        self._gathered = 0  # depth of gathered_parameters() blocks
        self._steps = {}
        # The scopes run on (the native executors keep those they point
        # into alive themselves, whatever order Python frees things in).
        self._scopes = {}
        self._probe = _core.MPIExecutor(self._threads, self._device)
        _configure_stall(stall_warn, stall_timeout, flight_dir)
        self._lock = threading.Lock()
        self._timeline = None
        if timeline is not None:
            path = os.fspath(timeline)
            if not path:
                raise ValueError("MPIExecutor(timeline=''): give a file name")
            _core.start_timeline(path)
            self._timeline = path
            atexit.register(self.close)

    def close(self):
        """Ends the timeline (collective: every rank calls it, or none and
        the end of the script does): rank 0 writes the trace file. Returns
        its path on rank 0, None elsewhere and without a timeline."""
        if self._timeline is None:
            return None
        self._timeline = None
        return _core.finish_timeline() or None

    @property
    def rank(self):
        return self._probe.rank

    @property
    def world_size(self):
        return self._probe.world_size

    def run(self, program=None, feed=None, fetch_list=None, scope=None,
            check_finite=None, return_numpy=True):
        """check_finite: None (default) checks, after each step of a
        training program, the averaged gradients (equal on every rank, so
        every rank raises FloatingPointError at the same step with the same
        message) and then the fetched losses; True also checks every
        floating fetch; False checks nothing.

        return_numpy: as Executor.run's (False: every fetch a
        fluid.LoDTensor)."""
        from . import compiler  # a CompiledProgram runs through its module
        handed = compiler._dispatch_mpi(self, program, feed, fetch_list,
                                        scope, check_finite, return_numpy)
        if handed is not None:
            return handed
        program = program or default_main_program()
        feed = _data_loader.feed_for_run(program, feed, self.world_size)
        scope = scope or global_scope()
        names = _names(fetch_list)
        with self._lock:
            self._scopes[id(scope)] = scope
            if program.is_startup:
                self._startup = program
                self._started.add(id(scope))
                if self._strategy.defer_startup:
                    self._deferred.add(id(scope))
                    return []
                # Sharded: the optimizer's accumulators are made as shards
                # by the first training run, never whole.
                self._probe.run_startup(program.desc, scope._core,
                                        bool(self._strategy.sharding))
                return []
            if id(scope) not in self._started:
                raise ValueError(
                    "run the startup program with this executor (on this "
                    "scope) before other programs: exe.run(startup_program)")
            pair = self._collective_pair(program)
            steps = _Steps.of(self._steps, pair[0] if pair else program,
                              scope)
            if not steps.training:
                self._refuse_deferred(scope)
                self._refuse_shards(program, scope)
                _core.stall_heartbeat()  # evaluating is progress too
                fetched = self._local.run(program.desc, scope._core,
                                          _feed(feed), names)
                out = [_lod_tensor.fetched_value(v) for v in fetched]
                steps.count += 1
                if check_finite:
                    _check_finite(names, out, None, steps.count)
                return out if return_numpy else \
                    [_lod_tensor.fetched_value(v, False) for v in fetched]
            if self._gathered:
                raise ValueError(
                    "MPIExecutor.run: a training step inside `with "
                    "exe.gathered_parameters():`; leave the block first")
            run = self._prepared(program, pair, scope)
            fetched = run.run(_feed(feed), names)
            out = [_lod_tensor.fetched_value(v) for v in fetched]
            steps.count += 1
            skipped = _skipped_by_loss_scaling(run.mixed_precision() == "fp16",
                                               scope, steps)
            if check_finite is not False and not skipped:
                _raise_non_finite_gradient(run, steps.count, self.world_size)
        if check_finite is not False and not skipped:
            _check_finite(names, out, None if check_finite else steps.losses,
                          steps.count, f" on rank {self.rank}")
        return out if return_numpy else \
            [_lod_tensor.fetched_value(v, False) for v in fetched]

    def _collective_pair(self, program):
        """The collective (main, startup) of a parameter-server trainer
        program that DistributeTranspiler made (converted for this world on
        first use, with the same checks as the trainer's); None for any
        other program. A server program is refused."""
        _transpiler._refuse_server_program(program)
        if _transpiler._pserver_pair(program) is None:
            return None
        key = (program.desc.id, program.desc.version)
        pair = self._converted.get(key)
        if pair is None:
            pair = self._converted[key] = _transpiler.to_collective(
                program, nranks=self.world_size, strategy=self._strategy)
        return pair

    def _prepared(self, program, pair, scope):
        """The native executor training `program` (`pair`: its collective
        form, or None) on `scope`: made, transpiled and checked across
        ranks on the first run, reused after."""
        key = (program.desc.id, program.desc.version, id(scope))
        run = self._runs.get(key)
        if run is not None:
            return run
        main, startup = pair or (program, self._startup)
        # A deferred startup runs now, transpiled, unless the scope holds
        # some of its vars by now (loaded since): then the plain startup
        # makes the rest whole, as without deferring, and the values held
        # are kept.
        deferred = id(scope) in self._deferred
        self._deferred.discard(id(scope))
        if deferred and any(scope._core.has(n) for n in _made_by(startup)):
            deferred = False
            self._init_missing_state(main, startup, scope)
        elif pair and not deferred:
            self._init_missing_state(main, startup, scope)
        run = self._probe if not self._runs else _core.MPIExecutor(
            self._threads, self._device)
        strategy = _optimizer._merged_strategy(self._strategy, main)
        _reader._set_pipeline(strategy._pipeline()[0])
        run.init(main.desc, startup.desc, scope._core,
                 strategy.serialize(), deferred)
        self._runs[key] = run
        _TRAINING[(program.desc.id, id(scope))] = self
        return run

    def _run_of(self, program, scope):
        """The native executor that trains `program` on `scope` (its latest
        version), or None."""
        found = None
        for (pid, _, sid), run in self._runs.items():
            if pid == program.desc.id and sid == id(scope):
                found = run
        return found

    def _save_vars(self, run, names, dirname, step, epoch):
        """fluid.io's save of `names` from the scope `run` trains on, when
        its optimizer state is sharded: collective, every rank gathers its
        shard, rank 0 writes (see fluid.io)."""
        with self._lock:
            run.save_vars(names, dirname, int(step), int(epoch))

    def _loaded(self, run):
        """After fluid.io loaded values into the scope `run` trains on with
        sharded optimizer state: every rank takes rank 0's values and its
        shard of the optimizer state. Collective."""
        with self._lock:
            run.broadcast_persistables()

    def _init_missing_state(self, main, startup, scope):
        """Initialises the persistable vars of `main` that `scope` lacks
        (a pserver-mode trainer's startup leaves the optimizer state to the
        servers) with `startup`, broadcast from rank 0, keeping the values
        the scope holds. Every rank lacks the same: they ran the same
        startup program."""
        made = _made_by(startup)
        if all(scope._core.has(v["name"]) for v in main.desc.vars()
               if v["persistable"] and v["name"] in made):
            return
        # The whole startup, so that new vars live where the executor puts
        # them; then what the scope held goes back (onto its device).
        held = {n: scope._core.get(n) for n in made if scope._core.has(n)}
        self._probe.run_startup(startup.desc, scope._core, False)
        for name, value in held.items():
            scope._core.set(name, value)

    def state_bytes(self, program=None, scope=None):
        """This rank's bytes of parameters, gradients and optimizer state
        for a training program it has run: a dict with keys 'parameters',
        'gradients' and 'optimizer_state'."""
        program = program or default_main_program()
        scope = scope or global_scope()
        run = self._runs.get(
            (program.desc.id, program.desc.version, id(scope)))
        if run is None:
            raise ValueError("state_bytes: run the training program with "
                             "this executor (and scope) first")
        return dict(run.state_bytes())

    def _refuse_deferred(self, scope, where="MPIExecutor.run"):
        """A program without optimizer ops on a scope whose startup waits
        for the first training run (`scope` None: on any scope) would find
        no parameter: refused, saying what to do."""
        if (id(scope) in self._deferred) if scope is not None \
                else self._deferred:
            raise ValueError(
                f"{where}: a scope's startup program waits for the first "
                "training run (DistributedStrategy.defer_startup), so no "
                "parameter exists yet: run a training step first, or leave "
                "defer_startup False")

    def _refuse_shards(self, program, scope):
        """An evaluation program on a scope whose training program keeps
        its parameters as shards (sharding stage 3) would read parameters
        that no rank holds whole: refused, saying what to do."""
        if self._gathered:
            return
        for (_, _, sid), run in self._runs.items():
            if sid == id(scope) and run.keeps_parameter_shards():
                raise ValueError(
                    "MPIExecutor.run: under sharding stage 3, tensor "
                    "parallelism or a pipeline each rank holds part of the "
                    "parameters "
                    "between steps, so a program without optimizer ops (an "
                    "evaluation) finds no whole parameter: run it inside "
                    "`with "
                    "exe.gathered_parameters():`, entered on every rank "
                    "(collective), or save a checkpoint and load it into a "
                    "fluid.Executor")

    @contextlib.contextmanager
    def gathered_parameters(self):
        """Collective, on every rank: inside the block the scope holds
        every parameter whole (under sharding stage 3, where each rank
        keeps 1/N of each between steps, under tensor parallelism, where
        it keeps a slice, and in a pipeline, where it keeps its stage's,
        they are gathered on entry and freed on exit), so that evaluation
        programs, fetches and reads of the parameters see them; training
        steps are not allowed inside. Otherwise it gathers nothing.

            with exe.gathered_parameters():
                if exe.rank == 0:
                    exe.run(test_program, feed=..., fetch_list=[loss])"""
        with self._lock:
            self._refuse_deferred(None, "MPIExecutor.gathered_parameters")
            runs = [r for r in self._runs.values()
                    if r.keeps_parameter_shards()]
            for run in runs:
                run.gather_parameters()
            self._gathered += 1
        try:
            yield self
        finally:
            with self._lock:
                self._gathered -= 1
                for run in runs:
                    run.drop_gathered()

    def wait_parameter_gathers(self):
        """Waits for the parameter all-gathers a sharded strategy with
        overlapped gathers leaves in flight after a step (reading the scope
        does it by itself)."""
        with self._lock:
            for scope in self._scopes.values():
                scope._core.settle()

    def check_consistency(self):
        """Compares parameter checksums across ranks; raises
        CollectiveError naming the first parameter that differs."""
        with self._lock:
            for run in self._runs.values():
                run.check_consistency()

    def sync_running_stats(self):
        """Averages every batch_norm's running mean and variance over the
        ranks (the transpiler's stat sync program), and gradient merge's
        accumulators (each rank's sum of its micro-steps' gradients, which
        merge to the same gradient averaged), so that all ranks, and what
        they save, hold the same. Collective: call it on every rank,
        before saving or evaluating."""
        with self._lock:
            for run in self._runs.values():
                run.sync_running_stats()

    def transpiled_program(self, program=None):
        program = program or default_main_program()
        for (pid, _, _), run in self._runs.items():
            if pid == program.desc.id:
                return Program(run.transpiled_main())
        raise KeyError("the program has not been run by this executor")
