// Open MPI transport, and the process-wide MPI environment.
//
// MPI is initialised once per process (MPI_Init_thread, asking for
// MPI_THREAD_MULTIPLE and accepting MPI_THREAD_SERIALIZED, since all
// collectives run on the communicator's one worker thread) unless another
// library (mpi4py) already did, and finalised once, by whoever initialised
// it, after the communicator's worker has been joined. Groups of ranks
// (CommBackend::Split, for tensor parallelism) run their collectives on
// threads of their own and need MPI_THREAD_MULTIPLE: Split refuses a
// lower level, naming it.
#pragma once

#include <memory>

#include "src/distributed/comm_backend.h"

namespace fluid {

// True when this process was started by mpirun/mpiexec (Open MPI sets
// OMPI_COMM_WORLD_SIZE; PMI-based launchers set PMI_SIZE).
bool LaunchedByMpi();

// Initialises MPI if nobody has. Safe to call many times.
void EnsureMpiInitialized();
// Finalises MPI if this library initialised it and it is not finalised.
void FinalizeMpiIfOwned();

// A backend over MPI_COMM_WORLD.
std::unique_ptr<CommBackend> MakeMpiBackend();

}  // namespace fluid
