// The CPU side of the recurrent ops' drivers (ops/lstm_op.h, ops/gru_op.h):
// what a driver asks of a place. The CUDA side, with the same members, is
// ops/cuda/recurrent_device.cuh; a driver is written once against either.
#pragma once

#include <algorithm>

#include "ops/conv_workspace.h"
#include "ops/op_helpers.h"
#include "ops/recurrent_helpers.h"
#include "src/framework/math/blas.h"

namespace fluid {
namespace ops {

class CpuRecurrentDevice {
 public:
  explicit CpuRecurrentDevice(const ExecutionContext& ctx) : ctx_(ctx) {}

  const ExecutionContext& ctx() const { return ctx_; }

  // f(i) for every i in [0, n).
  template <typename F>
  void ForEach(int64_t n, const F& f) const {
    ParallelFor(ctx_.device(), n, 32.0, [&f](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) f(i);
    });
  }

  template <typename T>
  void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
            T alpha, const T* a, const T* b, T beta, T* c) const {
    if (m == 0 || n == 0) return;
    math::Gemm<T>(ctx_.device(), trans_a, trans_b, m, n, k, alpha, a, b, beta,
                  c);
  }

  // The output of `slot` allocated at its inferred shape, or null when the
  // op does not write it.
  template <typename T>
  T* Out(const std::string& slot) const {
    Tensor* t = ctx_.Output(slot);
    return t == nullptr ? nullptr : t->mutable_data<T>();
  }

  template <typename T>
  void Zero(T* p, int64_t n) const {
    std::fill(p, p + n, T(0));
  }

  // `floats` elements of scratch, valid until the kernel returns.
  template <typename T>
  T* Scratch(int64_t floats) const {
    return ThreadScratch<T>(kScratchCol, floats);
  }

  // `floats` elements of scratch and `layout`'s index where the kernels
  // read it. Allocates nothing once the thread's scratch is large enough.
  template <typename T>
  RecurrentScratch<T> Reserve(const BatchLayout& layout, int64_t floats) const {
    return {ThreadScratch<T>(kScratchCol, floats),
            layout.At(layout.index.data())};
  }

 private:
  const ExecutionContext& ctx_;
};

}  // namespace ops
}  // namespace fluid
