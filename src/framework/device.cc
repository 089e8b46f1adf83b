#include "src/framework/device.h"

#include <cstdlib>

#include "src/framework/enforce.h"

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

void SetCurrentDevice(int device) {
#ifdef FLUID_WITH_CUDA
  cudaError_t rc = cudaSetDevice(device);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    FLUID_THROW(ErrorCode::kAborted, "cannot use CUDA device ", device, ": ",
                cudaGetErrorString(rc));
  }
#endif
}

int LocalRank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                           "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return std::atoi(v);
  }
  return 0;
}

int LocalRankDevice() {
  int count = CudaDeviceCount();
  if (count == 0) return -1;
  return LocalRank() % count;
}

}  // namespace fluid
