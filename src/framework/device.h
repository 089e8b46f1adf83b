// What accelerators this process can use.
#pragma once

namespace fluid {

// True when this build has the CUDA path (WITH_CUDA).
bool BuiltWithCuda();
// CUDA devices visible to this process; 0 in a build without CUDA, on a
// machine without a GPU or driver, or when the runtime reports an error.
int CudaDeviceCount();

}  // namespace fluid
