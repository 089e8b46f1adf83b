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
- a rank that ends (sys.exit, the end of the script) while other ranks
  still issue collectives is named by them and the job ends (see
  src/distributed/mpi_membership.h); a SIGKILLed rank is reported by mpirun,
  which ends the job.
"""
import atexit
import os
import sys

from . import _core

_MAX_MESSAGE = 500


def quote(text, limit=_MAX_MESSAGE):
    """`text` with control characters escaped and cut to `limit`
    characters, for one-line messages that echo user input."""
    text = str(text)
    out = []
    for ch in text[:limit]:
        code = ord(ch)
        out.append(f"\\x{code:02x}" if code < 32 or code == 127 else ch)
    s = "".join(out)
    if len(text) > limit:
        s += f"... ({len(text)} characters)"
    return s


def _install():
    size = _core.launcher_world_size()
    if size <= 1:
        return
    rank = _core.launcher_rank()
    _core.install_fatal_signal_line("fluid", rank)
    previous = sys.excepthook

    def end_job(etype, value, tb):
        try:
            previous(etype, value, tb)
        finally:
            line = (f"fluid: rank {rank}: uncaught {etype.__name__}: "
                    f"{quote(value)}; ending the job of {size} ranks\n")
            try:
                sys.stderr.flush()
                sys.stdout.flush()
            except Exception:  # a closed stream must not stop the abort
                pass
            os.write(2, line.encode("utf-8", "replace"))
            _core.abort_job(1)

    sys.excepthook = end_job
    # The farewell (see LeaveJob), also from a rank that never made a
    # communicator: registered first, so it runs after the script's own
    # exit handlers.
    atexit.register(_core.leave_job)


_install()
