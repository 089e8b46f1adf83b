// NCCL transport for device memory, bootstrapped over a host backend (MPI).
//
// Rank 0 makes the NCCL unique id and broadcasts it over the host backend;
// every rank then joins with ncclCommInitRank on its own device. Device
// collectives run on a dedicated stream (the Communicator's worker waits
// for the producing kernels first, then for the NCCL call to finish), so
// gradient reductions overlap the backward kernels issued after them. Host
// memory collectives (program hashes, small control values) go to the host
// backend. A group of ranks (Split) splits the host backend and makes a
// NCCL communicator of its own over the part. Built only with WITH_CUDA.
#pragma once

#include <memory>
#include <string>

#include "src/distributed/comm_backend.h"

namespace fluid {

// A backend for a job whose tensors live on CUDA device `device`: NCCL over
// `host` when every rank has a GPU of its own; `host` itself (which then
// stages device tensors through host memory) when two ranks share a GPU,
// which NCCL refuses. The reason for that fallback is written to *why
// (empty when NCCL is used); rank 0 also logs it. When NCCL fails to start
// there is no fallback: the error ("starting NCCL: ...") ends the job, since
// the ranks might not all have failed, and a rank that fell back alone
// would wait for the others in collectives they never issue.
std::unique_ptr<CommBackend> MakeDeviceBackend(
    std::unique_ptr<CommBackend> host, int device, std::string* why);

}  // namespace fluid
