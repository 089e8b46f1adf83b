// Error checks for the CUDA runtime, cuBLAS and NCCL: a failing call becomes
// a fluid::Error naming the call and the library's own message. Included
// only by code built with WITH_CUDA.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "src/framework/enforce.h"

namespace fluid {

const char* CublasStatusName(cublasStatus_t status);

}  // namespace fluid

#define FLUID_CUDA_CHECK(call)                                      \
  do {                                                              \
    cudaError_t fluid_cuda_rc_ = (call);                            \
    if (fluid_cuda_rc_ != cudaSuccess) {                            \
      cudaGetLastError();                                           \
      FLUID_THROW(::fluid::ErrorCode::kAborted, #call,              \
                  " failed: ", cudaGetErrorString(fluid_cuda_rc_)); \
    }                                                               \
  } while (0)

#define FLUID_CUBLAS_CHECK(call)                                             \
  do {                                                                       \
    cublasStatus_t fluid_cublas_rc_ = (call);                                \
    if (fluid_cublas_rc_ != CUBLAS_STATUS_SUCCESS) {                         \
      FLUID_THROW(::fluid::ErrorCode::kAborted, #call,                       \
                  " failed: ", ::fluid::CublasStatusName(fluid_cublas_rc_)); \
    }                                                                        \
  } while (0)
