"""DistributeTranspiler, with Fluid 1.x's signature and the seed's.

Collective mode (DistributeTranspilerConfig.mode "collective" or "nccl2"):
the trainer program carries allreduce ops and no parameter server is
needed; run it on every rank with fluid.MPIExecutor under mpirun -np N.
Parameter-server mode ("pserver", Fluid's default) produces the old
send/recv trainer program and one program per server, which to_collective()
turns into the collective program (there are no server processes here).

    config = fluid.DistributeTranspilerConfig()
    config.mode = "collective"
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(trainer_id, program=main, trainers=world)
    trainer_program = t.get_trainer_program()

The seed's form, transpile(optimize_ops, params_grads, pservers=...,
trainers=..., mode="collective"), still works and defaults to collective."""
import numbers

from . import _core
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
    bucket_mb and overlap (this project's) size the allreduce buckets and
    let them overlap the backward pass; sync_batch_norm makes every
    batch_norm compute its statistics over the global batch of all ranks;
    shard_optimizer (0, 1 or 2; True means 2) makes each rank update and
    store 1/N of the optimizer state (ZeRO stage 1 or 2, collective mode
    only); overlap_gather (with shard_optimizer) waits for each step's
    parameter all-gather in the next step, before the first op that reads
    the bucket, so that it overlaps the forward pass (the transpiled
    program then leaves gathers in flight between runs: run it with
    fluid.MPIExecutor, which waits before anything else reads the
    parameters);
    sparse_dense_ratio: a sparse gradient (embedding(is_sparse=True)) is
    gathered unless all ranks' rows together exceed this fraction of its
    table's height, when it is allreduced as a dense table instead."""

    def __init__(self):
        self.slice_var_up = True
        self.split_method = None
        self.min_block_size = 8192
        self.mode = "pserver"
        self.print_log = False
        self.bucket_mb = 4.0
        self.overlap = True
        self.sync_batch_norm = False
        self.shard_optimizer = 0
        self.overlap_gather = False
        self.sparse_dense_ratio = 0.25

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
        if not self.bucket_mb > 0:
            raise ValueError("DistributeTranspilerConfig.bucket_mb must be "
                             f"positive, got {self.bucket_mb!r}")
        if self.shard_optimizer not in (0, 1, 2, False, True):
            raise ValueError("DistributeTranspilerConfig.shard_optimizer: "
                             "use 0 (off), 1 or 2 (True means 2), got "
                             f"{self.shard_optimizer!r}")
        _check_sparse_dense_ratio(self.sparse_dense_ratio,
                                  "DistributeTranspilerConfig")


def _check_sparse_dense_ratio(ratio, where):
    if (isinstance(ratio, bool) or not isinstance(ratio, (int, float))
            or not ratio >= 0):
        raise ValueError(f"{where}.sparse_dense_ratio must be a number >= 0, "
                         f"got {ratio!r}")


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
                 sync_batch_norm=None):
        if isinstance(config, (int, float)) and not isinstance(config, bool):
            config, bucket_mb = None, config  # the seed's positional bucket_mb
        self._explicit_config = config is not None
        self.config = config if config is not None \
            else DistributeTranspilerConfig()
        if bucket_mb is not None:
            self.config.bucket_mb = bucket_mb
        if overlap is not None:
            self.config.overlap = overlap
        if sync_batch_norm is not None:
            self.config.sync_batch_norm = sync_batch_norm
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
        self.config._check()
        trainers = _trainer_count(trainers)
        if not 0 <= self.trainer_id < trainers:
            raise ValueError(f"transpile: trainer_id {self.trainer_id} is "
                             f"not in [0, {trainers}) for {trainers} "
                             "trainer(s)")
        self._bucket_bytes = int(self.config.bucket_mb * (1 << 20))
        self._overlap = bool(self.config.overlap)
        self._sync_batch_norm = bool(self.config.sync_batch_norm)
        shard = self.config.shard_optimizer
        self._shard_optimizer = 2 if shard is True else int(shard)
        self._sparse_dense_ratio = float(self.config.sparse_dense_ratio)
        self._transpile(pservers, trainers, program, startup_program,
                        _MODES[mode])

    def _transpile(self, pservers, trainers, program, startup_program, mode):
        program = program or default_main_program()
        startup_program = startup_program or default_startup_program()
        self.mode = mode
        if mode == "collective":
            main, start = _core.collective_transpile(
                program.desc, startup_program.desc, int(trainers),
                self._bucket_bytes, self._overlap, self._sync_batch_norm,
                self._shard_optimizer, self._sparse_dense_ratio,
                bool(self.config.overlap_gather))
            self._trainer, self._startup = Program(main), _startup(start)
        elif mode == "pserver":
            endpoints = [e.strip() for e in pservers.split(",") if e.strip()]
            main, start, servers = _core.pserver_transpile(
                program.desc, startup_program.desc, int(trainers), endpoints)
            self._trainer, self._startup = Program(main), _startup(start)
            self._servers = {ep: (Program(m), _startup(s))
                             for ep, m, s in servers}
        self._trainers = int(trainers)

    def get_trainer_program(self):
        self._check()
        return self._trainer

    def get_startup_program(self, endpoint=None, pserver_program=None):
        self._check()
        if endpoint is not None and self.mode == "pserver":
            return self._servers[endpoint][1]
        return self._startup

    def get_pserver_program(self, endpoint):
        self._check()
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


def to_collective(trainer_program, pserver_programs, startup_program,
                  nranks, bucket_mb=4.0, overlap=True):
    """Turns a pserver-style trainer program and its server programs
    ([(endpoint, main, startup)] or a DistributeTranspiler in pserver mode)
    into (main, startup) collective programs for `nranks` ranks."""
    if isinstance(pserver_programs, DistributeTranspiler):
        pserver_programs = pserver_programs.get_pserver_programs()
    main, start = _core.pserver_to_collective(
        trainer_program.desc, startup_program.desc,
        [(ep, m.desc, s.desc) for ep, m, s in pserver_programs], int(nranks),
        int(bucket_mb * (1 << 20)), overlap)
    return Program(main), _startup(start)
