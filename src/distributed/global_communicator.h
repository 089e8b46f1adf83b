// The process's communicator: made on first use, over MPI under mpirun,
// and the way a process leaves a multi-rank job.
#pragma once

#include "src/distributed/communicator.h"
#include "src/framework/types.h"

namespace fluid {

// The process-wide communicator, created on first use: over MPI when the
// process was started by mpirun (MPI initialised if nobody did), else a
// single-rank one. When the first user asks for a CUDA place and the job
// runs under mpirun, device tensors travel over NCCL (bootstrapped over
// MPI), or over MPI through host memory when ranks share a GPU (logged by
// rank 0; see MakeDeviceBackend). The place of later calls does not change
// the communicator already made.
Communicator* GlobalCommunicator(const Place& place = Place::CPU());
// Drains and joins the global communicator and finalises MPI if this
// library initialised it. Idempotent; also runs at exit.
void ShutdownGlobalCommunicator();
// Ends this process's part in a multi-rank job: ShutdownGlobalCommunicator,
// or, when this process never made a communicator, a farewell that lets
// ranks waiting for it in a collective end the job naming it (see
// MpiMembership). Idempotent; a no-op outside an MPI launch.
void LeaveJob();

}  // namespace fluid
