// What the MPI launcher told this process through its environment, read
// without initialising MPI: whether it runs under mpirun/mpiexec, as which
// rank of how many. For messages and safety checks made before (or without)
// a communicator; the communicator's own rank and size are authoritative.
#pragma once

namespace fluid {

// Ranks the launcher started (OMPI_COMM_WORLD_SIZE, PMI_SIZE, ...); 1 when
// the process was not started by an MPI launcher.
int LauncherWorldSize();
// This process's rank as the launcher numbered it; 0 when not launched.
int LauncherRank();

}  // namespace fluid
