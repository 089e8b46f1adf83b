// FLUID_HOSTDEVICE marks functions that both the CPU kernels (host
// compiler) and the CUDA kernels (nvcc) call, so that the per-element math of
// an op is written once.
#pragma once

#ifdef __CUDACC__
#define FLUID_HOSTDEVICE __host__ __device__ __forceinline__
#else
#define FLUID_HOSTDEVICE inline
#endif
