// The MPI launcher (mpirun, or its daemon) as this process sees it.
//
// What the launcher told this process through its environment, read
// without initialising MPI: whether it runs under mpirun/mpiexec, as which
// rank of how many. For messages and safety checks made before (or
// without) a communicator; the communicator's own rank and size are
// authoritative.
//
// A rank whose launcher is gone must stop at once: nobody will collect its
// output or its exit status, the job as the user sees it is over, and an
// orphaned rank 0 that keeps training keeps committing checkpoints behind
// the user's back. WatchLauncher asks the kernel to SIGKILL this process
// when its parent dies; LauncherAlive lets code about to write something
// that outlives the process (a checkpoint) check that the launcher is still
// there, closing the window between the parent's death and the signal.
// Thread-safe.
#pragma once

namespace fluid {

// Ranks the launcher started (OMPI_COMM_WORLD_SIZE, PMI_SIZE); 1 when the
// process was not started by an MPI launcher.
int LauncherWorldSize();
// This process's rank as the launcher numbered it; 0 when not launched.
int LauncherRank();

// Records the parent process and arranges for SIGKILL when it dies (Linux
// PR_SET_PDEATHSIG; elsewhere only the record). If the parent is already
// gone (this process was re-parented before the call), kills this process
// at once. Called by EnsureMpiInitialized for processes started by an MPI
// launcher, so both the trainer and Python ranks get it; safe to call more
// than once (the first record stays).
void WatchLauncher();

// False once the parent recorded by WatchLauncher is no longer this
// process's parent; true when nothing is watched.
bool LauncherAlive();

}  // namespace fluid
