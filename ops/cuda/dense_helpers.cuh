// What the CUDA kernels of the dense ops (mul, matmul, conv2d, softmax and
// the cross entropies) share beyond ops/cuda/cuda_helpers.cuh: GEMMs that
// also accept an empty contraction, a batch of products summed into one
// matrix in a fixed order, the block size of a one-block-per-row kernel,
// and the softmax of a row by such a kernel. Included only by ops/*.cu.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace cuda {

template <typename T>
struct ScaleInPlace {
  T* p;
  T s;
  __device__ void operator()(int64_t i) const { p[i] *= s; }
};

// C = beta * C: what a product with K = 0 leaves (cuBLAS rejects the zero
// leading dimension such a product has). beta = 0 writes zeros whatever C
// held, as a GEMM does.
template <typename T>
void ScaleOnly(const CUDADeviceContext& dev, int64_t count, T beta, T* c) {
  if (beta == T(0)) {
    ZeroAsync(dev, c, sizeof(T) * static_cast<size_t>(count));
  } else if (beta != T(1)) {
    ForEach(dev, count, ScaleInPlace<T>{c, beta});
  }
}

// Row-major C[m, n] = alpha * op(A) op(B) + beta * C for any k >= 0.
template <typename T>
void GemmAnyK(const CUDADeviceContext& dev, bool trans_a, bool trans_b,
              int64_t m, int64_t n, int64_t k, T alpha, const T* a, const T* b,
              T beta, T* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    ScaleOnly(dev, m * n, beta, c);
    return;
  }
  Gemm(dev, trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
}

// `batch` products C_b = alpha * op(A_b) op(B_b), C_b at c + b * m * n
// (overwritten); operand strides as in BatchedGemm (0: shared). Any k >= 0.
template <typename T>
void BatchedGemmAnyK(const CUDADeviceContext& dev, bool trans_a, bool trans_b,
                     int64_t batch, int64_t m, int64_t n, int64_t k, T alpha,
                     const T* a, int64_t stride_a, const T* b, int64_t stride_b,
                     T* c) {
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {
    ScaleOnly(dev, batch * m * n, T(0), c);
    return;
  }
  if (batch == 1) {
    Gemm(dev, trans_a, trans_b, m, n, k, alpha, a, b, T(0), c);
    return;
  }
  BatchedGemm(dev, trans_a, trans_b, batch, m, n, k, alpha, a, stride_a, b,
              stride_b, T(0), c, m * n);
}

// out[i] = sum over b of parts[b * count + i], added in increasing b: a
// fixed order, so the sum is the same bits run to run.
template <typename T>
struct SumOverBatch {
  const T* parts;
  int64_t batch, count;
  T* out;
  __device__ void operator()(int64_t i) const {
    T acc = parts[i];
    for (int64_t b = 1; b < batch; ++b) acc += parts[b * count + i];
    out[i] = acc;
  }
};

// As BatchedGemmAnyK when c_stride is m * n (each C_b its own matrix); a
// c_stride of 0 sums every product into the one C [m, n] (the gradient of an
// operand the batch shares). The sum goes through the context's workspace: each
// product is computed apart, then the products are added in batch order.
// An empty batch leaves a shared C zero.
template <typename T>
void BatchedGemmInto(const CUDADeviceContext& dev, bool trans_a, bool trans_b,
                     int64_t batch, int64_t m, int64_t n, int64_t k, T alpha,
                     const T* a, int64_t stride_a, const T* b, int64_t stride_b,
                     T* c, int64_t c_stride) {
  if (c_stride != 0 || batch == 1) {
    BatchedGemmAnyK(dev, trans_a, trans_b, batch, m, n, k, alpha, a, stride_a,
                    b, stride_b, c);
    return;
  }
  if (batch == 0) {
    ScaleOnly(dev, m * n, T(0), c);
    return;
  }
  if (m == 0 || n == 0) return;
  T* parts = static_cast<T*>(
      dev.Workspace(sizeof(T) * static_cast<size_t>(batch * m * n)));
  BatchedGemmAnyK(dev, trans_a, trans_b, batch, m, n, k, alpha, a, stride_a, b,
                  stride_b, parts);
  ForEach(dev, m * n, SumOverBatch<T>{parts, batch, m * n, c});
}

// Threads of a kernel that gives each row of `cols` elements one block: a
// multiple of the warp size (BlockReduce needs whole warps), no more than
// the row needs, at most kThreads.
inline int RowThreads(int64_t cols) {
  int64_t t = (cols + 31) / 32 * 32;
  return static_cast<int>(std::clamp<int64_t>(t, 32, kThreads));
}

// Blocks of such a kernel: one per row, up to the grid limit (the kernel
// loops over the rest).
inline unsigned RowBlocks(int64_t rows) {
  return static_cast<unsigned>(std::min<int64_t>(rows, 65535));
}

// The max of a softmax row and the sum of exp(x - max) over it.
template <typename T>
struct SoftmaxRowStats {
  T max;
  T sum;
};

// out[c] = exp(x[c] - max) * (1 / sum) for c in [0, d), d >= 1, by the
// whole block (a kernel with one block per row), the max and sum block
// reductions in a fixed order. Every thread gets the max and the sum.
template <typename T>
__device__ SoftmaxRowStats<T> BlockSoftmaxRow(const T* x, int64_t d, T* out) {
  // The row's first element seeds every thread's max (and stands in for the
  // identity), so no infinity is needed.
  T mx = x[0];
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) mx = MaxOp()(mx, x[c]);
  mx = BlockReduce(mx, MaxOp(), x[0]);
  T sum = 0;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
    const T e = exp(x[c] - mx);
    out[c] = e;
    sum += e;
  }
  sum = BlockReduce(sum, SumOp(), T(0));
  const T inv = T(1) / sum;
  // Each thread scales the entries it wrote itself.
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) out[c] *= inv;
  return {mx, sum};
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
