// What accelerators this process can use.
#pragma once

namespace fluid {

// True when this build has the CUDA path (WITH_CUDA).
bool BuiltWithCuda();
// CUDA devices visible to this process; 0 in a build without CUDA, on a
// machine without a GPU or driver, or when the runtime reports an error.
int CudaDeviceCount();
// Makes CUDA device `device` current on the calling thread (a no-op in a
// build without CUDA); an error names the device when that fails.
void SetCurrentDevice(int device);
// The device this process should use: its node-local rank (from the MPI
// launcher, OMPI_COMM_WORLD_LOCAL_RANK; 0 when not launched by MPI) modulo
// the visible device count. -1 when no device is visible.
int LocalRankDevice();
// The node-local rank as above.
int LocalRank();

}  // namespace fluid
