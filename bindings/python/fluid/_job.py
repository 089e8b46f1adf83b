"""The job policy of a process that mpirun started as one of several ranks:
a rank that cannot go on ends the whole job, with one line naming it,
instead of leaving the other ranks waiting for it in a collective.

Installed when `fluid` is imported under an MPI launcher with more than one
rank (nothing changes otherwise):

- an uncaught exception prints its traceback as usual, then
  `fluid: rank R: uncaught TYPE: MESSAGE; ending the job of N ranks`, and
  aborts the job (MPI_Abort, or exit 1 before MPI is up);
- a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) prints
  `fluid: rank R: fatal signal ...` before the process dies of it;
- `sys.exit` with a non-zero status prints
  `fluid: rank R: sys.exit(CODE); ending the job of N ranks` and aborts the
  job with that status;
- under a launch that cannot train (srun --mpi=pmi2, whose PMI-2 this
  Open MPI lacks; see src/distributed/launcher.h), fluid.MPIExecutor
  raises ValueError before MPI starts, and a script that ends without an
  uncaught exception prints `fluid: rank R: error: WHY` and exits 1
  without starting MPI;
- a rank that ends otherwise (sys.exit(0), the end of the script) while
  other ranks still issue collectives is named by them and the job ends
  (see src/distributed/mpi_membership.h); a SIGKILLed rank is reported by
  mpirun, which ends the job.

The launch checks of the executors live here too (see launch_refusal and
tasks_without_pmi_refusal): a plain fluid.Executor about to train under
`srun` tasks that know no peers, and ranks of one node that would bind the
same GPU, are refused with ValueError, as the trainer refuses them.
"""
import atexit
import collections
import os
import sys

from . import _core

_exit_status = [None]  # what sys.exit was last called with


def _end_job(line, status):
    """Writes `line` whole and aborts the job with `status`."""
    try:
        sys.stderr.flush()
        sys.stdout.flush()
    except Exception:  # a closed stream must not stop the abort
        pass
    os.write(2, (line + "\n").encode("utf-8", "replace"))
    _core.abort_job(status)


def _install():
    size = _core.launcher_world_size()
    if size <= 1:
        return
    rank = _core.launcher_rank()
    # Read now, as MPI_Init would see the launcher's variables (Open MPI
    # may rewrite them once it is up).
    refusal = _core.launch_refusal()
    _core.install_fatal_signal_line("fluid", rank)
    previous = sys.excepthook

    def end_job(etype, value, tb):
        try:
            previous(etype, value, tb)
        finally:
            _end_job(f"fluid: rank {rank}: uncaught {etype.__name__}: "
                     f"{_core.sanitize_message(str(value))}; ending the job of {size} ranks", 1)

    sys.excepthook = end_job

    # sys.exit raises SystemExit, which never reaches the excepthook: its
    # status is noted here and acted on at exit.
    plain_exit = sys.exit

    def noting_exit(status=None):
        _exit_status[0] = status
        plain_exit(status)

    sys.exit = noting_exit

    def leave():
        status = _exit_status[0]
        if status is not None and status != 0:
            _end_job(f"fluid: rank {rank}: sys.exit({_core.sanitize_message(repr(status))}); "
                     f"ending the job of {size} ranks",
                     status if isinstance(status, int) else 1)
        # A launch that cannot train never started MPI and must not start
        # it for the farewell (srun --mpi=pmi2 would abort in MPI_Init):
        # the trainer's one line, and status 1 for the launcher.
        if refusal:
            _end_job(f"fluid: rank {rank}: error: {refusal}", 1)
        _core.leave_job()

    # The farewell (see LeaveJob), also from a rank that never made a
    # communicator: registered first, so it runs after the script's own
    # exit handlers.
    atexit.register(leave)


# ---- the launch as the launcher's variables describe it ----

# What this process's launcher told it, read as src/distributed/launcher.cc
# reads it (LaunchInfoFrom): `name` is LaunchInfo::LauncherName ("" when
# not launched), `local_size` -1 when unknown, `local_rank_var` the variable
# that numbers the node's ranks.
_Launch = collections.namedtuple(
    "_Launch", "name size rank local_rank local_size local_rank_var")


def _env_int(env, name):
    """`name`'s value when set to a non-negative integer, else -1."""
    value = env.get(name, "")
    if value.isascii() and value.isdigit() and int(value) < (1 << 24):
        return int(value)
    return -1


def _slurm_per_node(text, node):
    """Slurm's count per node ("2(x3),1": 2, 2, 2, 1) for node `node`; -1
    when the list is malformed or shorter."""
    if node < 0:
        return -1
    seen = 0
    for item in text.split(","):
        count, _, repeat = item.partition("(x")
        if not count.isdigit():
            return -1
        if repeat:
            if not repeat.endswith(")") or not repeat[:-1].isdigit() or \
                    int(repeat[:-1]) < 1:
                return -1
            times = int(repeat[:-1])
        else:
            times = 1
        if node < seen + times:
            return int(count)
        seen += times
    return -1


def _read_launch(env):
    """The launch `env` (a mapping of environment variables) describes."""
    if "OMPI_COMM_WORLD_SIZE" in env:
        return _Launch("mpirun (Open MPI)",
                       max(_env_int(env, "OMPI_COMM_WORLD_SIZE"), 1),
                       max(_env_int(env, "OMPI_COMM_WORLD_RANK"), 0),
                       max(_env_int(env, "OMPI_COMM_WORLD_LOCAL_RANK"), 0),
                       _env_int(env, "OMPI_COMM_WORLD_LOCAL_SIZE"),
                       "OMPI_COMM_WORLD_LOCAL_RANK")
    if "SLURM_STEP_ID" in env and "SLURM_PROCID" in env:
        if "PMIX_RANK" in env:
            name = "srun --mpi=pmix"
        elif "PMI_FD" in env or "PMI_RANK" in env:
            name = "srun --mpi=pmi2"
        else:
            name = "srun without a PMI"
        return _Launch(name, max(_env_int(env, "SLURM_STEP_NUM_TASKS"), 1),
                       max(_env_int(env, "SLURM_PROCID"), 0),
                       max(_env_int(env, "SLURM_LOCALID"), 0),
                       _slurm_per_node(env.get("SLURM_STEP_TASKS_PER_NODE",
                                               ""),
                                       _env_int(env, "SLURM_NODEID")),
                       "SLURM_LOCALID")
    if "PMI_SIZE" in env or "PMIX_RANK" in env:
        rank = "PMI_RANK" if "PMI_RANK" in env else "PMIX_RANK"
        return _Launch("a PMI process manager",
                       max(_env_int(env, "PMI_SIZE"), 1),
                       max(_env_int(env, rank), 0),
                       max(_env_int(env, "MPI_LOCALRANKID"), 0),
                       _env_int(env, "MPI_LOCALNRANKS"), "MPI_LOCALRANKID")
    return _Launch("", 1, 0, 0, 1, "")


# Read at import, as MPI_Init would see the launcher's variables.
_LAUNCH = _read_launch(os.environ)
_REFUSAL = _core.launch_refusal()


def visible_gpus():
    """The CUDA devices this process sees (0 without CUDA or a GPU): what
    the ranks of a node spread over, one GPU each."""
    return _core.cuda_device_count()


def tasks_without_pmi_refusal():
    """Why a plain fluid.Executor must not train here, "" when it may:
    srun started several tasks with no PMI (`srun --mpi=none`, or Slurm's
    MpiDefault none), so every task would train alone on the whole data.
    The trainer's message, and what to run instead."""
    if _LAUNCH.name != "srun without a PMI" or _LAUNCH.size <= 1 or \
            not _REFUSAL:
        return ""
    return (f"{_REFUSAL}; and train with fluid.MPIExecutor (or a "
            "data-parallel fluid.CompiledProgram): a plain fluid.Executor "
            "trains every task alone under any launcher")


def _gpu_refusal(device_id):
    """Why this rank cannot run on a GPU with the place CUDAPlace(device_id)
    (None: CUDAPlace(), the node-local rank's device), "" when it can."""
    launch, count = _LAUNCH, visible_gpus()
    ranks = launch.local_size
    if ranks <= 1 or count <= 0:  # no GPU: the place itself is refused
        return ""
    if ranks > count:  # the trainer's message (CheckLaunch)
        return (f"{launch.name} put {ranks} ranks on this node but they "
                f"have {count} GPU(s) to spread over, so ranks {count} and 0 "
                f"would bind the same GPU: start at most {count} ranks per "
                "node (--ntasks-per-node, --gpus-per-task=1) or make more "
                "GPUs visible (CUDA_VISIBLE_DEVICES)")
    try:
        device = None if device_id is None else int(device_id)
    except (TypeError, ValueError):
        return ""  # not a device number: the place itself is refused
    if device is None or not 0 <= device < count or \
            device == launch.local_rank:
        return ""
    return (f"CUDAPlace({device}) on local rank {launch.local_rank} of the "
            f"{ranks} ranks {launch.name} put on this node ({count} GPUs "
            f"visible): given alike on every rank, it binds {ranks} ranks to "
            f"GPU {device}; give each rank its own GPU: "
            f"fluid.CUDAPlace(local rank) (here CUDAPlace("
            f"{launch.local_rank}), from {launch.local_rank_var}), "
            "fluid.CUDAPlace() or fluid.cuda_places()[0], with "
            "CUDA_VISIBLE_DEVICES to choose the node's GPUs")


def launch_refusal(place):
    """Why fluid.MPIExecutor cannot train on `place` under this launch, ""
    when it can: the trainer's refusals (srun with no PMI or with PMI-2,
    more ranks on a node than CPUs allotted or GPUs visible), and an
    explicit CUDAPlace(k) that is not this rank's own GPU while the node
    runs several ranks (named alike on every rank, it would bind them all
    to GPU k). Nothing changes for CPUPlace."""
    from .executor import CUDAPlace  # the executor imports this module
    why = _core.launch_refusal()
    if not why and isinstance(place, CUDAPlace):
        why = _gpu_refusal(place.device_id)
    return why


_install()
