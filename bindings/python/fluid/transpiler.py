"""The seed's DistributeTranspiler, collective by default: the trainer
program carries allreduce ops and no parameter server is needed.
mode="pserver" produces the old send/recv pair, which to_collective() turns
into the collective program."""
from . import _core
from .framework import (Program, _as_startup, default_main_program,
                        default_startup_program)


def _startup(desc):
    return _as_startup(Program(desc))


class DistributeTranspiler:
    """sync_batch_norm: every batch_norm computes its statistics over the
    global batch of all ranks (sets its sync_stats attribute)."""

    def __init__(self, bucket_mb=4.0, overlap=True, sync_batch_norm=False):
        self._bucket_bytes = int(bucket_mb * (1 << 20))
        self._overlap = overlap
        self._sync_batch_norm = bool(sync_batch_norm)
        self._trainer = self._startup = None
        self._servers = {}
        self.mode = None

    def transpile(self, optimize_ops=None, params_grads=None, pservers="",
                  trainers=1, trainer_id=0, program=None,
                  startup_program=None, mode="collective"):
        program = program or default_main_program()
        startup_program = startup_program or default_startup_program()
        self.mode = mode
        if mode == "collective":
            main, start = _core.collective_transpile(
                program.desc, startup_program.desc, int(trainers),
                self._bucket_bytes, self._overlap, self._sync_batch_norm)
            self._trainer, self._startup = Program(main), _startup(start)
        elif mode == "pserver":
            endpoints = [e.strip() for e in pservers.split(",") if e.strip()]
            main, start, servers = _core.pserver_transpile(
                program.desc, startup_program.desc, int(trainers), endpoints)
            self._trainer, self._startup = Program(main), _startup(start)
            self._servers = {ep: (Program(m), _startup(s))
                             for ep, m, s in servers}
        else:
            raise ValueError(f"unknown mode '{mode}'; use 'collective' or "
                             "'pserver'")
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
