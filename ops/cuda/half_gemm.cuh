// GEMMs of 16-bit matrices (bfloat16, float16) by cuBLAS for the CUDA
// kernels of mul, matmul and conv2d: cublasGemmEx with the operands in
// their 16-bit type, products summed in float32 (CUBLAS_COMPUTE_32F) on
// tensor cores (the default algorithm uses them for 16-bit operands), C in
// the operands' type or in float32 where a gradient accumulates across
// calls. alpha and beta are floats, so matmul's alpha is not rounded to
// 16 bits. Included only by ops/{mul,matmul,conv2d}_op.cu.
#pragma once

#include <cublas_v2.h>

#include <cstdint>

#include "ops/cuda/cuda_helpers.cuh"
#include "src/framework/float16.h"

namespace fluid {
namespace ops {
namespace cuda {

// cuBLAS's name for an element type.
template <typename T>
struct CudaTypeOf;
template <>
struct CudaTypeOf<bfloat16> {
  static constexpr cudaDataType_t value = CUDA_R_16BF;
};
template <>
struct CudaTypeOf<float16> {
  static constexpr cudaDataType_t value = CUDA_R_16F;
};
template <>
struct CudaTypeOf<float> {
  static constexpr cudaDataType_t value = CUDA_R_32F;
};

// cuBLAS's operation for a stored or transposed operand.
inline cublasOperation_t HalfOp(bool trans) {
  return trans ? CUBLAS_OP_T : CUBLAS_OP_N;
}

// cuBLAS takes 32-bit dims: larger ones are refused, naming them.
inline void CheckHalfDims(int64_t batch, int64_t m, int64_t n, int64_t k) {
  const int64_t limit = INT32_MAX;
  FLUID_ENFORCE(batch <= limit && m <= limit && n <= limit && k <= limit,
                "16-bit GEMM [", batch, " x ", m, ", ", n, ", ", k,
                "] exceeds cuBLAS's 32-bit limit");
}

// c[i] = beta * c[i], in float, rounded to TC.
template <typename TC>
struct ScaleHalf {
  TC* c;
  float beta;
  __device__ void operator()(int64_t i) const {
    c[i] = static_cast<TC>(static_cast<float>(c[i]) * beta);
  }
};

// Row-major C [m, n] = alpha * op(A) op(B) + beta * C for any k >= 0: A
// and B of the 16-bit type T, C of T or float. (cuBLAS is column-major:
// the row-major product is C^T = op(B)^T op(A)^T, operands swapped.)
template <typename T, typename TC>
void HalfGemm(const CUDADeviceContext& dev, bool ta, bool tb, int64_t m,
              int64_t n, int64_t k, float alpha, const T* a, const T* b,
              float beta, TC* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // cuBLAS rejects the zero leading dimension
    if (beta == 0.0f) {
      ZeroAsync(dev, c, sizeof(TC) * static_cast<size_t>(m * n));
    } else if (beta != 1.0f) {
      ForEach(dev, m * n, ScaleHalf<TC>{c, beta});
    }
    return;
  }
  CheckHalfDims(1, m, n, k);
  FLUID_CUBLAS_CHECK(cublasGemmEx(
      dev.cublas(), HalfOp(tb), HalfOp(ta), int(n), int(m), int(k), &alpha, b,
      CudaTypeOf<T>::value, int(tb ? k : n), a, CudaTypeOf<T>::value,
      int(ta ? m : k), &beta, c, CudaTypeOf<TC>::value, int(n),
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// out[i] = acc[i] rounded to T.
template <typename T>
struct RoundFloats {
  const float* acc;
  T* out;
  __device__ void operator()(int64_t i) const {
    out[i] = static_cast<T>(acc[i]);
  }
};

// `batch` products C_b = alpha * op(A_b) op(B_b), operand strides as in
// BatchedGemm (0: one matrix the batch shares). A C stride of m n gives
// each product its own C; a C stride of 0 sums them into one C [m, n] (the
// gradient of a shared operand): in float32 through the context's
// workspace, in batch order, rounded once. Any k >= 0; an empty batch
// leaves a shared C zero.
template <typename T>
void HalfBatchedGemm(const CUDADeviceContext& dev, bool ta, bool tb,
                     int64_t batch, int64_t m, int64_t n, int64_t k,
                     float alpha, const T* a, int64_t stride_a, const T* b,
                     int64_t stride_b, T* c, int64_t stride_c) {
  if (m == 0 || n == 0) return;
  if (stride_c == 0 && batch != 1) {
    float* acc = static_cast<float*>(
        dev.Workspace(sizeof(float) * static_cast<size_t>(m * n)));
    if (batch == 0) ZeroAsync(dev, acc, sizeof(float) * m * n);
    for (int64_t i = 0; i < batch; ++i)
      HalfGemm<T, float>(dev, ta, tb, m, n, k, alpha, a + i * stride_a,
                         b + i * stride_b, i == 0 ? 0.0f : 1.0f, acc);
    ForEach(dev, m * n, RoundFloats<T>{acc, c});
    return;
  }
  if (batch == 0) return;
  if (batch == 1 || k == 0) {
    for (int64_t i = 0; i < batch; ++i)
      HalfGemm<T, T>(dev, ta, tb, m, n, k, alpha, a + i * stride_a,
                     b + i * stride_b, 0.0f, c + i * m * n);
    return;
  }
  CheckHalfDims(batch, m, n, k);
  const float beta = 0.0f;
  FLUID_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      dev.cublas(), HalfOp(tb), HalfOp(ta), int(n), int(m), int(k), &alpha, b,
      CudaTypeOf<T>::value, int(tb ? k : n), stride_b, a, CudaTypeOf<T>::value,
      int(ta ? m : k), stride_a, &beta, c, CudaTypeOf<T>::value, int(n), m * n,
      int(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
