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
"""
import atexit
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


_install()
