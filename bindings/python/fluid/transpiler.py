"""DistributeTranspiler, with Fluid 1.x's signature and the seed's.

Collective mode (DistributeTranspilerConfig.mode "collective" or "nccl2"):
the trainer program carries allreduce ops and no parameter server is
needed; run it on every rank with fluid.MPIExecutor under mpirun -np N.
Parameter-server mode ("pserver", Fluid's default) produces the old
send/recv trainer program and one program per server, which to_collective()
turns into the collective program (there are no server processes here).
The trainer program keeps its server programs with it, so that
fluid.MPIExecutor runs it as it is (converting it on its first run) and
to_collective(program) needs nothing else.

    config = fluid.DistributeTranspilerConfig()
    config.mode = "collective"
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(trainer_id, program=main, trainers=world)
    trainer_program = t.get_trainer_program()

The seed's form, transpile(optimize_ops, params_grads, pservers=...,
trainers=..., mode="collective"), still works and defaults to collective."""
import numbers
import os

from . import _core
from .distributed_strategy import (DistributedStrategy,
                                   _LEGACY_DEFAULTS,
                                   _from_legacy as _strategy_from_legacy)
from .framework import (Program, _as_startup, default_main_program,
                        default_startup_program)


def _startup(desc):
    return _as_startup(Program(desc))


class RoundRobin:
    """Assigns parameters to parameter servers in turn: the one assignment
    pserver mode makes (Fluid's ps_dispatcher.RoundRobin)."""

    def __init__(self, pserver_endpoints=()):
        self._eps = list(pserver_endpoints)


class HashName(RoundRobin):
    """Fluid's assignment by name hash; refused here (see
    DistributeTranspilerConfig.split_method)."""


_MODES = {"collective": "collective", "nccl2": "collective",
          "pserver": "pserver"}


class DistributeTranspilerConfig:
    """How DistributeTranspiler rewrites a program (Fluid 1.x's class).

    mode: "pserver" (Fluid's default: a send/recv trainer program and server
    programs, for to_collective()), or "collective" / "nccl2" (allreduce,
    no server). slice_var_up, split_method and min_block_size concern how a
    parameter server splits variables; here parameters are assigned whole
    and round robin, so they are checked and kept but change nothing.

    How the ranks share the work is `strategy`, a fluid.DistributedStrategy
    (buckets, overlap, batch norm over the global batch, optimizer-state
    sharding, sparse gradients). The attributes this class had for those
    before the strategy existed (bucket_mb, overlap, ...) still read and
    write it."""

    def __init__(self):
        self.slice_var_up = True
        self.split_method = None
        self.min_block_size = 8192
        self.mode = "pserver"
        self.print_log = False
        self.strategy = DistributedStrategy()
        self._settings = {}  # the earlier attributes, as set

    def __getattr__(self, name):
        if name.startswith("_") or name not in _LEGACY_DEFAULTS:
            raise AttributeError(
                f"DistributeTranspilerConfig has no attribute '{name}'")
        return self._settings.get(name, _LEGACY_DEFAULTS[name])

    def __setattr__(self, name, value):
        if name in _LEGACY_DEFAULTS:
            self._settings[name] = value
        else:
            object.__setattr__(self, name, value)

    def _check(self):
        if self.mode not in _MODES:
            raise ValueError(
                f"DistributeTranspilerConfig.mode '{self.mode}': use "
                "'collective' (or its alias 'nccl2') or 'pserver'")
        if self.split_method not in (None, RoundRobin):
            raise ValueError(
                "DistributeTranspilerConfig.split_method: parameters go to "
                "servers round robin here; use None or RoundRobin")
        if not isinstance(self.min_block_size, int) or \
                self.min_block_size <= 0:
            raise ValueError("DistributeTranspilerConfig.min_block_size must "
                             f"be a positive int, got {self.min_block_size!r}")
        return _strategy_from_legacy("DistributeTranspilerConfig",
                                     self.strategy, **self._settings)


def _trainer_count(trainers):
    """Fluid passes the trainer endpoints ("ip:port,ip:port") as `trainers`
    in nccl2 mode, a count otherwise."""
    if isinstance(trainers, str):
        eps = [e for e in trainers.split(",") if e.strip()]
        if not eps:
            raise ValueError("transpile: trainers names no endpoint")
        return len(eps)
    if int(trainers) < 1:
        raise ValueError(f"transpile: trainers must be >= 1, got {trainers}")
    return int(trainers)


class DistributeTranspiler:
    """DistributeTranspiler(config=None): see the module's docstring. The
    seed's DistributeTranspiler(bucket_mb=4.0, overlap=True) is accepted
    too."""

    def __init__(self, config=None, bucket_mb=None, overlap=None,
                 **settings):
        if isinstance(config, (int, float)) and not isinstance(config, bool):
            config, bucket_mb = None, config  # the seed's positional bucket_mb
        self._explicit_config = config is not None
        self.config = config if config is not None \
            else DistributeTranspilerConfig()
        settings.update(bucket_mb=bucket_mb, overlap=overlap)
        for name, value in settings.items():
            if name not in _LEGACY_DEFAULTS:
                raise TypeError("DistributeTranspiler() got an unexpected "
                                f"keyword argument '{name}'")
            if value is not None:
                setattr(self.config, name, value)
        self._trainer = self._startup = None
        self._servers = {}
        self.mode = None
        self.trainer_id = 0

    def transpile(self, *args, **kwargs):
        """transpile(trainer_id, program=None, pservers="127.0.0.1:6174",
        trainers=1, sync_mode=True, startup_program=None,
        current_endpoint="127.0.0.1:6174"), as in Fluid 1.x, the mode taken
        from the config; or the seed's transpile(optimize_ops,
        params_grads, pservers="", trainers=1, trainer_id=0, program=None,
        startup_program=None, mode="collective")."""
        # Fluid 1.x's first argument is the trainer id, an int; the seed's
        # is the list of optimize ops.
        seed_style = (args and not isinstance(args[0], numbers.Integral)) or \
            "optimize_ops" in kwargs or "params_grads" in kwargs or \
            (not args and "trainer_id" not in kwargs)
        if seed_style:
            return self._transpile_seed(*args, **kwargs)
        return self._transpile_1x(*args, **kwargs)

    def _transpile_1x(self, trainer_id, program=None,
                      pservers="127.0.0.1:6174", trainers=1, sync_mode=True,
                      startup_program=None, current_endpoint="127.0.0.1:6174",
                      mode=None):
        if not sync_mode:
            raise NotImplementedError(
                "transpile(sync_mode=False): asynchronous training needs "
                "parameter servers; here gradients are averaged by a "
                "synchronous allreduce")
        self.trainer_id = int(trainer_id)
        self._run(mode or self.config.mode, program, startup_program,
                  pservers, trainers)

    def _transpile_seed(self, optimize_ops=None, params_grads=None,
                        pservers="", trainers=1, trainer_id=0, program=None,
                        startup_program=None, mode=None):
        if mode is None:
            mode = self.config.mode if self._explicit_config else "collective"
        self.trainer_id = int(trainer_id)
        self._run(mode, program, startup_program, pservers, trainers)

    def _run(self, mode, program, startup_program, pservers, trainers):
        if mode not in _MODES:
            raise ValueError(f"unknown mode '{mode}'; use 'collective' (or "
                             "'nccl2') or 'pserver'")
        self._strategy = self.config._check()
        trainers = _trainer_count(trainers)
        if not 0 <= self.trainer_id < trainers:
            raise ValueError(f"transpile: trainer_id {self.trainer_id} is "
                             f"not in [0, {trainers}) for {trainers} "
                             "trainer(s)")
        self._transpile(pservers, trainers, program, startup_program,
                        _MODES[mode])

    def _transpile(self, pservers, trainers, program, startup_program, mode):
        program = program or default_main_program()
        startup_program = startup_program or default_startup_program()
        self.mode = mode
        if mode == "collective":
            main, start = _core.collective_transpile(
                program.desc, startup_program.desc, int(trainers),
                self._strategy.serialize())
            self._trainer, self._startup = Program(main), _startup(start)
        elif mode == "pserver":
            endpoints = [e.strip() for e in pservers.split(",") if e.strip()]
            main, start, servers = _core.pserver_transpile(
                program.desc, startup_program.desc, int(trainers), endpoints)
            self._trainer, self._startup = Program(main), _startup(start)
            self._servers = {ep: (Program(m), _startup(s))
                             for ep, m, s in servers}
            for ep, (server, _) in self._servers.items():
                server._pserver_endpoint = ep
            # What MPIExecutor and to_collective(program) convert it with.
            self._trainer._pserver_pair = _PserverPair(
                self.get_pserver_programs(), self._startup)
        self._trainers = int(trainers)

    def get_trainer_program(self):
        """The program every trainer runs. In pserver mode it sends
        gradients to servers; fluid.MPIExecutor runs it all the same,
        converted to allreduce on its first run (see to_collective)."""
        self._check()
        return self._trainer

    def get_startup_program(self, endpoint=None, pserver_program=None):
        """The trainers' startup program; in pserver mode with `endpoint`,
        that server's (refused in a process launched as a server)."""
        self._check()
        if endpoint is not None and self.mode == "pserver":
            _refuse_pserver_role("get_startup_program")
            return self._servers[endpoint][1]
        return self._startup

    def get_pserver_program(self, endpoint):
        """The server program of `endpoint` in pserver mode, for
        to_collective. A process launched as a parameter server
        (PADDLE_TRAINING_ROLE or TRAINING_ROLE "PSERVER") gets an error:
        every process is a trainer here."""
        self._check()
        _refuse_pserver_role("get_pserver_program")
        if self.mode == "collective":
            raise ValueError(
                "no parameter server is needed: in collective mode every "
                "trainer averages gradients by allreduce. Run only the "
                "trainer program, on every rank, with fluid.MPIExecutor "
                "under mpirun -np N")
        if endpoint not in self._servers:
            raise KeyError(f"no pserver at '{endpoint}'; known: "
                           f"{sorted(self._servers)}")
        return self._servers[endpoint][0]

    def get_pserver_programs(self):
        """[(endpoint, main, startup)] in pserver mode."""
        return [(ep, m, s) for ep, (m, s) in self._servers.items()]

    def _check(self):
        if self._trainer is None:
            raise ValueError("call transpile() first")


_ROLE_VARS = ("PADDLE_TRAINING_ROLE", "TRAINING_ROLE")


def _refuse_pserver_role(what):
    """Raises in a process that a Fluid 1.x launch made a parameter server
    (its role variable says PSERVER): no server runs here."""
    for var in _ROLE_VARS:
        if os.environ.get(var, "").strip().upper() == "PSERVER":
            raise RuntimeError(
                f"DistributeTranspiler.{what}: this process was launched as "
                f"a parameter server ({var}=PSERVER), and no parameter "
                "server runs here: launch every process as a trainer "
                "(mpirun -np N python train.py, with the role TRAINER or "
                "unset); each runs t.get_trainer_program() with "
                "fluid.MPIExecutor, which averages the gradients by "
                "allreduce")


class _PserverPair:
    """What a pserver-mode trainer program is converted with: its servers'
    programs [(endpoint, main, startup)] and the trainers' startup."""

    def __init__(self, servers, startup):
        self.servers, self.startup = servers, startup


def _refuse_server_program(program):
    """Raises for a server program of a pserver-mode DistributeTranspiler:
    no process is a server here."""
    endpoint = getattr(program, "_pserver_endpoint", None)
    if endpoint is not None:
        raise NotImplementedError(
            f"this is the parameter server program of {endpoint} "
            "(DistributeTranspiler.get_pserver_program), and no parameter "
            "server runs here: launch every process as a trainer (mpirun "
            "-np N python train.py); each runs t.get_trainer_program() with "
            "fluid.MPIExecutor")


def _pserver_pair(program):
    """The server programs a pserver-mode DistributeTranspiler kept with
    `program`, or None (any other program, or one cloned or loaded)."""
    return getattr(program, "_pserver_pair", None)


def to_collective(trainer_program, pserver_programs=None,
                  startup_program=None, nranks=None, bucket_mb=None,
                  overlap=None, strategy=None):
    """Turns a pserver-style trainer program and its server programs
    ([(endpoint, main, startup)] or a DistributeTranspiler in pserver mode)
    into (main, startup) collective programs for `nranks` ranks, as
    `strategy` (a fluid.DistributedStrategy) says; bucket_mb and overlap,
    when given, override its fields.

    For a trainer program from DistributeTranspiler.get_trainer_program()
    only the program is needed: pserver_programs and startup_program
    default to the ones made with it, nranks to the ranks the launcher
    started (1 without mpirun)."""
    pair = _pserver_pair(trainer_program)
    if pserver_programs is None:
        if pair is None:
            raise ValueError(
                "to_collective: the trainer program carries no server "
                "programs (only a program from "
                "DistributeTranspiler.get_trainer_program() in pserver mode "
                "does, not a clone or a loaded one); pass them: "
                "to_collective(program, t.get_pserver_programs(), "
                "t.get_startup_program(), nranks)")
        pserver_programs = pair.servers
    if isinstance(pserver_programs, DistributeTranspiler):
        pserver_programs = pserver_programs.get_pserver_programs()
    if startup_program is None:
        startup_program = pair.startup if pair is not None \
            else default_startup_program()
    if nranks is None:
        nranks = _core.launcher_world_size()
    if isinstance(nranks, bool) or not isinstance(
            nranks, numbers.Integral) or nranks < 1:
        raise ValueError(f"to_collective(nranks={nranks!r}): the number of "
                         "ranks, an int >= 1")
    strategy = _strategy_from_legacy("to_collective", strategy,
                                     bucket_mb=bucket_mb, overlap=overlap)
    main, start = _core.pserver_to_collective(
        trainer_program.desc, startup_program.desc,
        [(ep, m.desc, s.desc) for ep, m, s in pserver_programs], int(nranks),
        strategy.serialize())
    return Program(main), _startup(start)


def memory_optimize(input_program, skip_opt_set=None, print_log=False,
                    level=0, skip_grads=True):
    """Accepted for Fluid 1.x programs, and does nothing, as in Fluid 1.6
    and later: the executor frees every temporary tensor after its last use
    and reuses the buffers by itself. Warns once."""
    _memory_notice("memory_optimize")


def release_memory(input_program, skip_opt_set=None):
    """Accepted for Fluid 1.x programs, and does nothing (see
    memory_optimize). Warns once."""
    _memory_notice("release_memory")


def _memory_notice(name):
    import warnings
    warnings.warn(f"fluid.{name} does nothing: the executor frees each "
                  "temporary after its last use by itself", UserWarning,
                  stacklevel=3)
