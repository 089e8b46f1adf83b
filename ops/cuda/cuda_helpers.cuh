// What the CUDA kernels share: launching a per-element functor over a range,
// per-row reductions, GEMM through cuBLAS on the context's stream, and
// device copies. Included only by ops/*.cu.
//
// Kernels are templates over the element type and registered for (CUDA,
// float) and (CUDA, double) with REGISTER_FLOAT_KERNELS(op, kCUDA, Kernel).
// Shape inference, schemas and grad makers come from the op's .cc file; a
// .cu file adds kernels only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>

#include "ops/hostdevice.h"
#include "src/framework/cuda_check.h"
#include "src/framework/cuda_device_context.h"
#include "src/framework/grad_op_maker.h"
#include "src/framework/math/int_math.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {
namespace cuda {

constexpr int kThreads = 256;

inline const CUDADeviceContext& Dev(const ExecutionContext& ctx) {
  return ctx.device_as<CUDADeviceContext>();
}

// Launch errors (bad configuration, no kernel image for this GPU) surface
// here, attributed to the op; faults inside a kernel surface at the next
// synchronisation (the end of Executor::Run).
inline void CheckLaunch() { FLUID_CUDA_CHECK(cudaGetLastError()); }

template <typename F>
__global__ void ForEachKernel(int64_t n, F f) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    f(i);
  }
}

// Calls f(i) for every i in [0, n) on the device, on the context's stream.
// A grid-stride loop: at most 32 blocks per multiprocessor.
template <typename F>
void ForEach(const CUDADeviceContext& dev, int64_t n, F f) {
  if (n <= 0) return;
  int64_t blocks = std::min<int64_t>(CeilDiv(n, kThreads),
                                     int64_t{dev.multiprocessors()} * 32);
  ForEachKernel<<<static_cast<unsigned>(blocks), kThreads, 0, dev.stream()>>>(
      n, f);
  CheckLaunch();
}

// Reduction of one value per thread to one per block (all threads get it).
struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};

template <typename T, typename Op>
__device__ T BlockReduce(T value, Op op, T identity) {
  __shared__ T shared[32];
  __shared__ T result;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2)
    value = op(value, __shfl_down_sync(0xffffffffu, value, offset));
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  if (warp == 0) {
    const int warps = (blockDim.x + 31) / 32;
    value = lane < warps ? shared[lane] : identity;
    for (int offset = 16; offset > 0; offset /= 2)
      value = op(value, __shfl_down_sync(0xffffffffu, value, offset));
    if (lane == 0) result = value;
  }
  __syncthreads();
  T out = result;
  __syncthreads();  // `result` may be reused by a following call
  return out;
}

// out[r] = reduce over c in [0, cols) of f(r, c), one block per row, in a
// fixed order (deterministic run to run).
template <typename T, typename F, typename Op>
__global__ void RowReduceKernel(int64_t rows, int64_t cols, F f, Op op,
                                T identity, T* out) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    T acc = identity;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      acc = op(acc, f(r, c));
    acc = BlockReduce(acc, op, identity);
    if (threadIdx.x == 0) out[r] = acc;
  }
}

template <typename T, typename F, typename Op>
void RowReduce(const CUDADeviceContext& dev, int64_t rows, int64_t cols, F f,
               Op op, T identity, T* out) {
  if (rows <= 0) return;
  int64_t blocks = std::min<int64_t>(rows, int64_t{65535});
  RowReduceKernel<T>
      <<<static_cast<unsigned>(blocks), kThreads, 0, dev.stream()>>>(
          rows, cols, f, op, identity, out);
  CheckLaunch();
}

// out[0] = sum over i in [0, n) of f(i): one block per row of a 2-level
// reduction through the context's workspace (deterministic).
template <typename T, typename F>
struct FlatAt {
  F f;
  int64_t n, cols;
  __device__ T operator()(int64_t r, int64_t c) const {
    int64_t i = r * cols + c;
    return i < n ? f(i) : T(0);
  }
};
template <typename T>
struct ReadAt {
  const T* p;
  __device__ T operator()(int64_t r, int64_t c) const { return p[c]; }
};

template <typename T, typename F>
void Sum(const CUDADeviceContext& dev, int64_t n, F f, T* out) {
  const int64_t cols = 4096;
  const int64_t rows = std::max<int64_t>(1, CeilDiv(n, cols));
  T* partial = static_cast<T*>(dev.Workspace(sizeof(T) * rows));
  RowReduce<T>(dev, rows, cols, FlatAt<T, F>{f, n, cols}, SumOp(), T(0),
               partial);
  RowReduce<T>(dev, 1, rows, ReadAt<T>{partial}, SumOp(), T(0), out);
}

// Row-major C[m, n] = alpha * op(A) op(B) + beta * C, op(A) [m, k],
// op(B) [k, n], by cuBLAS on the context's stream.
void Gemm(const CUDADeviceContext& dev, bool trans_a, bool trans_b, int64_t m,
          int64_t n, int64_t k, float alpha, const float* a, const float* b,
          float beta, float* c);
void Gemm(const CUDADeviceContext& dev, bool trans_a, bool trans_b, int64_t m,
          int64_t n, int64_t k, double alpha, const double* a, const double* b,
          double beta, double* c);
// `batch` independent products; each operand advances by its stride
// (elements) per batch entry; a stride of 0 reuses one matrix.
void BatchedGemm(const CUDADeviceContext& dev, bool trans_a, bool trans_b,
                 int64_t batch, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t stride_a, const float* b,
                 int64_t stride_b, float beta, float* c, int64_t stride_c);
void BatchedGemm(const CUDADeviceContext& dev, bool trans_a, bool trans_b,
                 int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                 const double* a, int64_t stride_a, const double* b,
                 int64_t stride_b, double beta, double* c, int64_t stride_c);

// Device-to-device copy on the context's stream.
void CopyAsync(const CUDADeviceContext& dev, void* dst, const void* src,
               size_t bytes);
void ZeroAsync(const CUDADeviceContext& dev, void* dst, size_t bytes);

// The output tensor of `slot` allocated on the kernel's device.
template <typename T>
T* OutputData(const ExecutionContext& ctx, const std::string& slot,
              size_t i = 0) {
  Tensor* t = ctx.Output(slot, i);
  return t == nullptr ? nullptr : t->mutable_data<T>(ctx.place());
}

// The output tensor of `slot` shaped like `like` (the input it replaces,
// usually the same var updated in place), allocated on the kernel's device.
template <typename T>
T* OutputLike(const ExecutionContext& ctx, const std::string& slot,
              const Tensor& like) {
  return ctx.Output(slot)->mutable_data<T>(like.shape(), ctx.place());
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
