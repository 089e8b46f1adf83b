"""CompiledProgram, BuildStrategy and ExecutionStrategy (Fluid 1.x's
`fluid.compiler`), and the places of this process (`cpu_places`,
`cuda_places`), over the collective engine.

    compiled = fluid.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, build_strategy=build_strategy)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    exe.run(compiled, feed=..., fetch_list=[loss])

Data parallelism here is over MPI ranks, one place per process: under
`mpirun -np N` the first run of a training program compiled with
`with_data_parallel` gives every rank rank 0's values of what the startup
program initialised (whatever ran on the scope since, a checkpoint load
included), then every run is a step of fluid.MPIExecutor with the
DistributedStrategy the BuildStrategy maps to; each rank feeds its own part
of the batch and fetches its own values. In a world of one it runs the
program as it is. Several places in one process (`CPU_NUM=4`,
`places=fluid.cpu_places(4)`, several GPUs) are refused, naming the mpirun
command that runs them as ranks. docs/python.md, "Fluid 1.x data
parallelism", has the table of what maps to what."""
import os
import weakref

from . import _core
from . import transpiler as _transpiler
from .build_strategy import (BuildStrategy, ExecutionStrategy,
                             _check_trainers, _strategy_of)
from .executor import (CPUPlace, CUDAPlace, MPIExecutor, _LAUNCHED_RANKS,
                       _device_of, global_scope)
from .framework import Program, _as_startup

__all__ = ["BuildStrategy", "CompiledProgram", "ExecutionStrategy",
           "cpu_places", "cuda_places"]


# ---- places ----

def cpu_places(device_count=None):
    """A list of `device_count` CPUPlace; by default as many as the CPU_NUM
    environment variable says, 1 when it is unset (Fluid's rule). Data
    parallelism runs one place per process: see CompiledProgram."""
    if device_count is None:
        text = os.environ.get("CPU_NUM", "").strip()
        if not text:
            return [CPUPlace()]
        try:
            device_count = int(text)
        except ValueError:
            raise ValueError(f"CPU_NUM={text!r}: set it to a positive "
                             "integer (the number of places)") from None
        if device_count < 1:
            raise ValueError(f"CPU_NUM={text!r}: set it to a positive "
                             "integer (the number of places)")
    if isinstance(device_count, bool) or not isinstance(device_count, int) \
            or device_count < 1:
        raise ValueError("cpu_places(device_count=...) takes a positive int, "
                         f"got {device_count!r}")
    return [CPUPlace() for _ in range(device_count)]


def cuda_places(device_ids=None):
    """A list of CUDAPlace: `device_ids` (an int or a list of ints), else
    those of FLAGS_selected_gpus ("0,1"), else, under an MPI launcher with
    several ranks, this rank's device (CUDAPlace() of this process's
    node-local rank: one place per process), else every visible device."""
    if not _core.built_with_cuda():
        raise NotImplementedError(
            "cuda_places: this build has no CUDA (configure with "
            "WITH_CUDA=ON); use fluid.cpu_places()")
    count = _core.cuda_device_count()
    if device_ids is None:
        selected = os.environ.get("FLAGS_selected_gpus", "").strip()
        if selected:
            try:
                device_ids = [int(s) for s in selected.split(",")]
            except ValueError:
                raise ValueError(f"FLAGS_selected_gpus={selected!r}: a "
                                 "comma-separated list of device ids, e.g. "
                                 "'0,1'") from None
        elif _LAUNCHED_RANKS > 1:
            return [CUDAPlace(_core.local_rank_device())]
        else:
            device_ids = list(range(count))
    if isinstance(device_ids, int) and not isinstance(device_ids, bool):
        device_ids = [device_ids]
    for i in device_ids:
        if isinstance(i, bool) or not isinstance(i, int) or \
                not 0 <= i < count:
            raise ValueError(f"cuda_places: device id {i!r}: {count} CUDA "
                             f"device(s) visible (0..{count - 1})")
    return [CUDAPlace(i) for i in device_ids]


def _one_place(places, exe_place, where):
    """The place this process runs on: the executor's, and `places` (the
    compiled program's, or the default ones for the executor's kind) must
    be that one place. Several are refused with the command that runs them
    as ranks."""
    if places is None:
        places = cuda_places() if isinstance(exe_place, CUDAPlace) \
            else cpu_places()
        origin = "CUDA devices visible" if isinstance(exe_place, CUDAPlace) \
            else f"CPU_NUM={os.environ.get('CPU_NUM')}"
    else:
        origin = "places given"
    if len(places) != 1:
        world = _LAUNCHED_RANKS
        raise ValueError(
            f"{where}: {len(places)} places in one process ({origin}); here "
            "each process drives one place and data parallelism runs over "
            "MPI ranks, each feeding its own part of the batch: launch "
            f"`mpirun -np {len(places) * world} python3 train.py` with one "
            "place per process (places=None, CPU_NUM unset or 1)")
    if origin == "places given" and \
            _device_of(places[0]) != _device_of(exe_place):
        raise ValueError(
            f"{where}: the compiled program's place {places[0]!r} is not the "
            f"executor's {exe_place!r}; here the executor's place is the one "
            "place of this process: give the same place, or places=None")
    return exe_place


# ---- the startup programs run on each scope ----

# scope -> the startup Programs run on it, oldest first (weakly keyed: a
# scope's record goes with it).
_STARTUPS = weakref.WeakKeyDictionary()
_MAX_STARTUPS = 8


def _note_startup(program, scope):
    """Records that `program` (when it is a startup program) ran on `scope`
    (None: the global scope), for a CompiledProgram run there later."""
    if not isinstance(program, Program) or not program.is_startup:
        return
    seen = _STARTUPS.setdefault(scope or global_scope(), [])
    seen[:] = [p for p in seen if p is not program][-(_MAX_STARTUPS - 1):]
    seen.append(program)


# scope -> the startup Program whose run on it waits for the first step of
# Fleet's main program (DistributedStrategy.defer_startup given to
# fleet.distributed_optimizer marks the startup program); weakly keyed.
_DEFERRED = weakref.WeakKeyDictionary()


def _deferred_startup(program, scope):
    """A plain Executor's run of `program` on `scope`: [] when it is a
    startup program Fleet's defer_startup marked (recorded, not run); a
    refusal, saying what to do, for any other program on a scope whose
    startup waits; None otherwise (the Executor runs it)."""
    if not isinstance(program, Program):
        return None
    scope = scope or global_scope()
    if program.is_startup and getattr(program, "_defer_startup", False):
        _note_startup(program, scope)
        _DEFERRED[scope] = program
        return []
    if scope in _DEFERRED:
        raise ValueError(
            "Executor.run: this scope's startup program waits for the first "
            "step of Fleet's main program (DistributedStrategy."
            "defer_startup): run a step of fleet.main_program first, or "
            "leave defer_startup False")
    return None


def _startup_for(program, scope, given):
    """The startup program whose values `scope` holds for `program`: the one
    given (Fleet's), else the one it was built with among those run on the
    scope, else the last one run there."""
    if given is not None:
        return given
    seen = _STARTUPS.get(scope, [])
    built_with = set(program._builders)
    for p in reversed(seen):
        if p.desc.id in built_with:
            return p
    if seen:
        return seen[-1]
    raise ValueError(
        "run the startup program on this scope before the compiled program "
        "(exe.run(fluid.default_startup_program())): its values are what "
        "every rank starts from")


def _broadcast_program(startup, scope):
    """A startup program that only gives every rank rank 0's value of each
    persistable var `startup` declares and `scope` holds: its declarations
    without its ops (fluid.MPIExecutor adds a broadcast of each)."""
    held = set(scope.var_names())
    names = [v["name"] for v in startup.desc.vars()
             if v["persistable"] and v["name"] in held]
    if not names:
        return startup
    return _as_startup(Program(_core.prune(startup.desc, names, names)))


# ---- CompiledProgram ----

def _loss_name(program, loss_name):
    """The name of `loss_name` (a str or Variable), checked against the
    program: a var of it, and the loss it minimises when it trains."""
    if loss_name is None:
        return None
    name = getattr(loss_name, "name", loss_name)
    if not isinstance(name, str):
        raise TypeError("with_data_parallel(loss_name=...) takes the loss's "
                        f"name or Variable, got {type(loss_name).__name__}")
    if not program.desc.has_var(name):
        raise ValueError(f"with_data_parallel(loss_name={name!r}): the "
                         "program has no such variable")
    losses = program.desc.loss_vars() if program.desc.is_training() else []
    if losses and name not in losses:
        raise ValueError(
            f"with_data_parallel(loss_name={name!r}): the program's "
            f"optimizer minimises {', '.join(map(repr, losses))}, not "
            f"{name!r}")
    return name


def _feed_dict(feed, where):
    """Fluid's data-parallel feed: a dict, or a list of one dict per place
    (one place per process here)."""
    if isinstance(feed, (list, tuple)):
        if len(feed) != 1:
            raise ValueError(
                f"{where}: a feed list of {len(feed)} dicts (one per place), "
                "but this process has one place: feed this rank's part of "
                "the batch as one dict (each rank of mpirun feeds its own)")
        feed = feed[0]
    if feed is not None and not isinstance(feed, dict):
        raise TypeError(f"{where}: feed takes a dict {{name: array}} (or a "
                        f"list of one), got {type(feed).__name__}")
    return feed


class CompiledProgram:
    """A program with how to run it (Fluid 1.x's class; also
    `fluid.compiler.CompiledProgram`). `CompiledProgram(program)` alone
    runs as the program does; `.with_data_parallel(...)` makes runs
    data-parallel over the ranks mpirun started (see the module's
    docstring). Run it with `exe.run(compiled, feed=..., fetch_list=...)`
    on a fluid.Executor or a fluid.MPIExecutor."""

    def __init__(self, program_or_graph, build_strategy=None):
        if not isinstance(program_or_graph, Program):
            raise TypeError(
                "CompiledProgram takes a fluid.Program (graphs are not "
                f"built here), got {type(program_or_graph).__name__}")
        self._program = program_or_graph
        self._build_strategy = build_strategy
        _strategy_of(build_strategy, "CompiledProgram")  # checks its type
        self._exec_strategy = ExecutionStrategy()
        self._is_data_parallel = False
        self._loss_name = None
        self._places = None
        self._share_vars_from = None
        self._startup = None  # the startup program, when known (Fleet)
        self._strategy = None
        self._runners = {}  # (device, threads) -> MPIExecutor

    @property
    def program(self):
        """The program this compiles."""
        return self._program

    def with_data_parallel(self, loss_name=None, build_strategy=None,
                           exec_strategy=None, share_vars_from=None,
                           places=None):
        """Runs the program data-parallel over the MPI launcher's ranks, one
        place per process; returns self. loss_name (optional here: the
        program knows its loss) is checked against the program;
        build_strategy (a BuildStrategy, or a fluid.DistributedStrategy)
        replaces the one given to the constructor; exec_strategy sets the
        threads; share_vars_from (a data-parallel CompiledProgram) is
        accepted: every program run on a scope shares its variables;
        places, when given, must be one place, the executor's."""
        where = "CompiledProgram.with_data_parallel"
        if self._is_data_parallel:
            raise RuntimeError(f"{where}: this program is data-parallel "
                               "already; call it once")
        if build_strategy is not None:
            self._build_strategy = build_strategy
        if exec_strategy is not None and \
                not isinstance(exec_strategy, ExecutionStrategy):
            raise TypeError(f"{where}: exec_strategy takes a "
                            "fluid.ExecutionStrategy, got "
                            f"{type(exec_strategy).__name__}")
        if share_vars_from is not None and not (
                isinstance(share_vars_from, CompiledProgram) and
                share_vars_from._is_data_parallel):
            raise TypeError(f"{where}: share_vars_from takes a "
                            "CompiledProgram made data-parallel by "
                            "with_data_parallel, got "
                            f"{share_vars_from!r}")
        if places is not None:
            places = list(places) if isinstance(places, (list, tuple)) \
                else [places]
            if not places:
                raise ValueError(f"{where}: places is empty; give one place "
                                 "or None")
            _one_place(places, places[0], where)
        self._loss_name = _loss_name(self._program, loss_name)
        self._strategy = _strategy_of(self._build_strategy, where)
        _check_trainers(self._build_strategy, where)
        self._exec_strategy = exec_strategy or self._exec_strategy
        self._share_vars_from = share_vars_from
        self._places = places
        self._is_data_parallel = True
        return self

    def with_inference_optimize(self, config):
        """Fluid's inference-engine path; not here."""
        raise NotImplementedError(
            "CompiledProgram.with_inference_optimize: there is no separate "
            "inference engine; save the model with "
            "fluid.io.save_inference_model and run the program it loads with "
            "fluid.Executor")

    def _threads(self):
        return self._exec_strategy.num_threads or 1

    def _data_parallel_step(self, program_trains):
        """True when a run is a data-parallel step over several ranks."""
        return self._is_data_parallel and program_trains and \
            _LAUNCHED_RANKS > 1

    def _run(self, exe, feed, fetch_list, scope, check_finite,
             return_numpy):
        """fluid.Executor.run's hand-off (see the module's docstring)."""
        where = "Executor.run(CompiledProgram)"
        feed = _feed_dict(feed, where)
        scope = scope or global_scope()
        program = self._program
        if self._is_data_parallel:
            _one_place(self._places, exe.place, where)
        if not self._data_parallel_step(program.desc.is_training()) or \
                program.is_startup:
            return exe.run(program, feed=feed, fetch_list=fetch_list,
                           scope=scope, check_finite=check_finite,
                           return_numpy=return_numpy)
        runner = self._runner(exe.place, scope)
        return runner.run(program, feed=feed, fetch_list=fetch_list,
                          scope=scope, check_finite=check_finite,
                          return_numpy=return_numpy)

    def _runner(self, place, scope):
        """The MPIExecutor that runs this program's steps on `place`, with
        `scope` started: at its first use on a scope every rank takes rank
        0's values of what the startup program initialised."""
        key = (_device_of(place), self._threads())
        if key not in self._runners:
            self._runners[key] = MPIExecutor(place, self._threads(),
                                             strategy=self._strategy)
        mpi = self._runners[key]
        if id(scope) not in mpi._started:  # it keeps the scopes it started
            startup = _startup_for(self._program, scope, self._startup)
            if _DEFERRED.get(scope) is startup:
                # Not run yet (defer_startup): the MPIExecutor runs it,
                # transpiled, at its first training step.
                del _DEFERRED[scope]
                mpi.run(startup, scope=scope)
            else:
                mpi.run(_broadcast_program(startup, scope), scope=scope)
            # The job is prepared with the startup program that made the
            # scope's values (a sharded job makes its shards from it).
            mpi._startup = startup
        return mpi

    def _run_on_mpi(self, mpi, feed, fetch_list, scope, check_finite,
                    return_numpy):
        """fluid.MPIExecutor.run's hand-off: the program runs on `mpi`, whose
        strategy must agree with what the build strategy sets."""
        where = "MPIExecutor.run(CompiledProgram)"
        feed = _feed_dict(feed, where)
        if self._is_data_parallel:
            _one_place(self._places, mpi.place, where)
            differ = _differences(self._strategy, mpi._strategy)
            if self._build_strategy is not None and differ:
                raise ValueError(
                    f"{where}: the compiled program's build strategy asks "
                    f"for {differ}, but this MPIExecutor's strategy differs; "
                    "give the strategy to one of them only "
                    "(fluid.MPIExecutor(strategy=...), or the build strategy "
                    "with a plain fluid.Executor)")
        return mpi.run(self._program, feed=feed, fetch_list=fetch_list,
                       scope=scope, check_finite=check_finite,
                       return_numpy=return_numpy)


def _differences(mine, theirs):
    """'field=value (theirs: value)' for each field where the strategies
    differ, joined by ", "; "" when they agree."""
    out = []
    for path in _core.strategy_fields(mine.serialize()):
        a = _core.strategy_get(mine.serialize(), path)
        b = _core.strategy_get(theirs.serialize(), path)
        if a != b:
            out.append(f"{path}={a!r} (the executor's: {b!r})")
    return ", ".join(out)


def _dispatch(exe, program, feed, fetch_list, scope, check_finite,
              return_numpy):
    """fluid.Executor.run's hand-off: runs a CompiledProgram and returns its
    fetches; for any other program notes a startup program's run on its
    scope and returns None (the Executor runs it)."""
    if isinstance(program, CompiledProgram):
        return program._run(exe, feed, fetch_list, scope, check_finite,
                            return_numpy)
    if isinstance(program, Program) and _runs_on_ranks(program):
        return _run_on_ranks(exe, program, feed, fetch_list, scope,
                             check_finite, return_numpy)
    deferred = _deferred_startup(program, scope)
    if deferred is not None:
        return deferred
    _note_startup(program, scope)
    return None


# program -> (its version, _runs_on_ranks's answer); forgotten with it
_ON_RANKS = weakref.WeakKeyDictionary()


def _runs_on_ranks(program):
    """Whether `program` only runs across ranks: a transpiled one (its
    collective ops, c_*, need a communicator) or a parameter-server trainer
    program that DistributeTranspiler made in pserver mode. Read once per
    program version, not every run."""
    if _transpiler._pserver_pair(program) is not None:
        return True
    version, found = _ON_RANKS.get(program, (None, None))
    if version != program.desc.version:
        found = any(t.startswith("c_") for t in program.op_types())
        _ON_RANKS[program] = (program.desc.version, found)
    return found


def _run_on_ranks(exe, program, feed, fetch_list, scope, check_finite,
                  return_numpy):
    """A program that runs across ranks, given to a plain Executor as the
    1.x scripts' endings do (a DistributeTranspiler's trainer program in
    any mode, and its startup): it runs data-parallel on the ranks the
    launcher started (a world of one without one) through an internal
    fluid.MPIExecutor per scope, which converts a pserver-mode program on
    its first run (fluid.transpiler.to_collective). A startup program run
    on the scope by this Executor before gives the starting values, rank
    0's on every rank."""
    scope = scope or global_scope()
    mpi = exe._rank_runners.get(id(scope))
    if mpi is None:
        mpi = exe._rank_runners[id(scope)] = MPIExecutor(exe.place,
                                                         exe._threads)
    if program.is_startup:
        return mpi.run(program, scope=scope)
    if id(scope) not in mpi._started:
        startup = _startup_for(program, scope, None)
        mpi.run(_broadcast_program(startup, scope), scope=scope)
        mpi._startup = startup
    return mpi.run(program, feed=feed, fetch_list=fetch_list, scope=scope,
                   check_finite=check_finite, return_numpy=return_numpy)


def _dispatch_mpi(mpi, program, feed, fetch_list, scope, check_finite,
                  return_numpy):
    """fluid.MPIExecutor.run's hand-off: runs a CompiledProgram and returns
    its fetches; None for any other program (the MPIExecutor runs it)."""
    if isinstance(program, CompiledProgram):
        return program._run_on_mpi(mpi, feed, fetch_list, scope,
                                   check_finite, return_numpy)
    return None
