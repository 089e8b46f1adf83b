// The CPU side of the recurrent ops' drivers (ops/lstm_op.h, ops/gru_op.h):
// what a driver asks of a place. The CUDA side, with the same members, is
// ops/cuda/recurrent_device.cuh; a driver is written once against either.
#pragma once

#include <algorithm>
#include <type_traits>

#include "ops/conv_workspace.h"
#include "ops/half_matrix.h"
#include "ops/op_helpers.h"
#include "ops/recurrent_helpers.h"
#include "src/framework/math/blas.h"
#include "src/framework/math/dnnl_gemm.h"

namespace fluid {
namespace ops {

// Lives for one kernel call; not thread-safe (the kernel's thread only).
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

  // Row-major C [m, n] = alpha op(A) op(B) + beta C. T == C: the type's
  // own GEMM. 16-bit T with float C: the products summed in float32 and
  // added to C (oneDNN's product is rounded to T once before it is added).
  // 16-bit T and C: the float32 sum rounded once into C; beta must be 0.
  template <typename T, typename C>
  void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
            ComputeType<C> alpha, const T* a, const T* b, ComputeType<C> beta,
            C* c) const {
    if (m == 0 || n == 0) return;
    if constexpr (std::is_same<T, C>::value && !IsHalfType<T>::value) {
      math::Gemm<T>(ctx_.device(), trans_a, trans_b, m, n, k, alpha, a, b, beta,
                    c);
    } else {
      HalfGemm(trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
    }
  }

  // Names the recurrent weight (`count` elements), which the kernel reads
  // and never writes: where a 16-bit GEMM runs in float32, operands within
  // it come from one float32 copy made on first use instead of one per step.
  template <typename T>
  void SetWeight(const T* weight, int64_t count) const {
    weight_ = weight;
    weight_bytes_ = sizeof(T) * count;
    weight_f32_ = nullptr;
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
  template <typename T, typename C>
  void HalfGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                const T* a, const T* b, float beta, C* c) const;

  // A float32 copy of b[0, count): from the weight's copy when b lies in it.
  template <typename T>
  const float* FloatOperand(HalfSlot slot, const T* b, int64_t count) const;

  const ExecutionContext& ctx_;
  mutable const void* weight_ = nullptr;
  mutable size_t weight_bytes_ = 0;
  mutable const float* weight_f32_ = nullptr;
};

template <typename T>
const float* CpuRecurrentDevice::FloatOperand(HalfSlot slot, const T* b,
                                              int64_t count) const {
  const char* base = static_cast<const char*>(weight_);
  const char* p = reinterpret_cast<const char*>(b);
  if (base == nullptr || p < base ||
      p + sizeof(T) * count > base + weight_bytes_)
    return FloatCopy(ctx_.device(), slot, b, count);
  if (weight_f32_ == nullptr)
    weight_f32_ =
        FloatCopy(ctx_.device(), kHalfIn2, static_cast<const T*>(weight_),
                  static_cast<int64_t>(weight_bytes_ / sizeof(T)));
  return weight_f32_ + (p - base) / sizeof(T);
}

template <typename T, typename C>
void CpuRecurrentDevice::HalfGemm(bool ta, bool tb, int64_t m, int64_t n,
                                  int64_t k, float alpha, const T* a,
                                  const T* b, float beta, C* c) const {
  static_assert(IsHalfType<T>::value, "16-bit operands");
  constexpr bool kRound = std::is_same<T, C>::value;  // C is T
  FLUID_ENFORCE(!kRound || beta == 0.0f,
                "a 16-bit recurrent GEMM into 16 bits cannot accumulate");
  const CPUDeviceContext& dev = ctx_.device();
  math::GemmBatch g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = alpha;
  if constexpr (kRound) {
    if (math::DnnlGemm<T>(dev, g, a, b, c)) return;
  } else {
    T* product = reinterpret_cast<T*>(HalfScratch(kHalfOut1, (m * n + 1) / 2));
    if (math::DnnlGemm<T>(dev, g, a, b, product)) {
      ParallelFor(dev, m * n, kConvertCost, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i)
          c[i] = (beta == 0.0f ? 0.0f : beta * c[i]) + ToCompute(product[i]);
      });
      return;
    }
  }
  const float* af = FloatCopy(dev, kHalfIn0, a, m * k);
  const float* bf = FloatOperand(kHalfIn1, b, k * n);
  float* cf =
      kRound ? HalfScratch(kHalfOut0, m * n) : reinterpret_cast<float*>(c);
  if (k == 0) {
    for (int64_t i = 0; i < m * n; ++i)
      cf[i] = beta == 0.0f ? 0.0f : beta * cf[i];
  } else {
    math::Gemm<float>(dev, ta, tb, m, n, k, alpha, af, bf, beta, cf);
  }
  if constexpr (kRound) RoundInto(dev, cf, m * n, c);
}

}  // namespace ops
}  // namespace fluid
