// The CUDA side of the recurrent ops' drivers (ops/lstm_op.h, ops/gru_op.h),
// with the members of CpuRecurrentDevice (ops/recurrent_cpu.h): per-element
// work as grid-stride kernels, GEMMs by cuBLAS, scratch and the batch
// layout's index in the context's workspace, all on the context's stream.
// Included only by ops/*.cu.
#pragma once

#include <type_traits>

#include "ops/cuda/dense_helpers.cuh"
#include "ops/cuda/half_gemm.cuh"
#include "ops/recurrent_helpers.h"

namespace fluid {
namespace ops {

class CudaRecurrentDevice {
 public:
  explicit CudaRecurrentDevice(const ExecutionContext& ctx) : ctx_(ctx) {}

  const ExecutionContext& ctx() const { return ctx_; }

  template <typename F>
  void ForEach(int64_t n, const F& f) const {
    cuda::ForEach(cuda::Dev(ctx_), n, f);
  }

  // As CpuRecurrentDevice::Gemm: 16-bit operands by cublasGemmEx, summed
  // in float32 into a float C, or rounded once into a 16-bit C.
  template <typename T, typename C>
  void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
            ComputeType<C> alpha, const T* a, const T* b, ComputeType<C> beta,
            C* c) const {
    if constexpr (std::is_same<T, C>::value && !IsHalfType<T>::value) {
      cuda::GemmAnyK(cuda::Dev(ctx_), trans_a, trans_b, m, n, k, alpha, a, b,
                     beta, c);
    } else {
      cuda::HalfGemm<T, C>(cuda::Dev(ctx_), trans_a, trans_b, m, n, k, alpha, a,
                           b, beta, c);
    }
  }

  // The CPU device's float32 copy of the weight has no use here.
  template <typename T>
  void SetWeight(const T*, int64_t) const {}

  template <typename T>
  T* Out(const std::string& slot) const {
    return cuda::OutputData<T>(ctx_, slot);
  }

  template <typename T>
  void Zero(T* p, int64_t n) const {
    if (n > 0) cuda::ZeroAsync(cuda::Dev(ctx_), p, sizeof(T) * n);
  }

  // `floats` elements of scratch in the workspace (valid until its next
  // use).
  template <typename T>
  T* Scratch(int64_t floats) const {
    return static_cast<T*>(cuda::Dev(ctx_).Workspace(sizeof(T) * floats));
  }

  // `floats` elements of scratch, then a device copy of `layout`'s index,
  // in the workspace (valid until its next use). Allocates nothing once the
  // workspace is large enough.
  template <typename T>
  RecurrentScratch<T> Reserve(const BatchLayout& layout, int64_t floats) const {
    const auto& dev = cuda::Dev(ctx_);
    const size_t head = (sizeof(T) * floats + 255) / 256 * 256;
    const size_t bytes = sizeof(int64_t) * layout.index.size();
    char* base = static_cast<char*>(dev.Workspace(head + bytes));
    auto* index = reinterpret_cast<int64_t*>(base + head);
    if (bytes > 0) {
      FLUID_CUDA_CHECK(cudaMemcpyAsync(index, layout.index.data(), bytes,
                                       cudaMemcpyHostToDevice, dev.stream()));
    }
    return {reinterpret_cast<T*>(base), layout.At(index)};
  }

 private:
  const ExecutionContext& ctx_;
};

}  // namespace ops
}  // namespace fluid
