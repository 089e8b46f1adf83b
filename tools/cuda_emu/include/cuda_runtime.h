// The CUDA runtime header of the emulation: the host API plus the device
// side (kernel qualifiers, built-in indices, __syncthreads, warp shuffles,
// atomics, launches) for .cu files compiled as C++ after
// tools/cuda_emu/rewrite_launches.py has turned `K<<<g, b, s, st>>>(args)`
// into `::cuda_emu::Launch(g, b, s, st).Run(...)`.
#pragma once

#include "cuda_emu/device.h"
#include "cuda_runtime_api.h"

template <class T>
inline cudaError_t cudaMalloc(T** ptr, size_t size) {
  return ::cudaMalloc(reinterpret_cast<void**>(ptr), size);
}
