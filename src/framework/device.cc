#include "src/framework/device.h"

#ifdef FLUID_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fluid {

bool BuiltWithCuda() {
#ifdef FLUID_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int CudaDeviceCount() {
#ifdef FLUID_WITH_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
#else
  return 0;
#endif
}

}  // namespace fluid
