// What the recurrent ops over level-1 LoD batches (lstm, gru) share, CPU and
// CUDA alike: the activations they name by attribute, and the batch layout
// that lets one GEMM per time step serve every sequence still running.
//
// The layout (Fluid's "sequence2batch"): the sequences sorted by length,
// longest first (ties in their original order); step t holds, in that
// order, the row of time t of every sequence longer than t. The rows of
// step t are contiguous, and the sequences running at step t are a prefix
// of those running at step t - 1, so the previous hidden rows of step t are
// the first rows of step t - 1. With is_reverse, time t of a sequence is
// its row length - 1 - t. Free of Eigen so that nvcc compiles the CUDA
// kernels that include it.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/activation_functors.h"
#include "ops/half_math.h"
#include "ops/hostdevice.h"
#include "src/framework/lod.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

enum class RecurrentAct : int32_t { kSigmoid, kTanh, kRelu, kIdentity };

// `value` of attr `attr` of `op`: sigmoid, tanh, relu or identity; anything
// else is an error naming the op, the attr and the choices.
RecurrentAct ParseRecurrentAct(const std::string& op, const std::string& attr,
                               const std::string& value);

template <typename T>
FLUID_HOSTDEVICE T Activate(RecurrentAct act, T x) {
  switch (act) {
    case RecurrentAct::kSigmoid:
      return SigmoidFunctor::Forward(x);
    case RecurrentAct::kTanh:
      return TanhFunctor::Forward(x);
    case RecurrentAct::kRelu:
      return ReluFunctor::Forward(x);
    default:
      return x;
  }
}

// dX from the activation's output `out` and dOut.
template <typename T>
FLUID_HOSTDEVICE T ActivationGrad(RecurrentAct act, T out, T dout) {
  switch (act) {
    case RecurrentAct::kSigmoid:
      return SigmoidFunctor::Backward(out, dout);
    case RecurrentAct::kTanh:
      return TanhFunctor::Backward(out, dout);
    case RecurrentAct::kRelu:
      return ReluFunctor::Backward(out, dout);
    default:
      return dout;
  }
}

// The layout's index arrays, wherever they live (host or device).
struct BatchIndex {
  const int64_t* offsets;  // steps + 1: the first batch row of each step
  const int64_t* order;    // count: sorted position -> sequence
  const int64_t* rows;     // total: batch row -> row of the LoD tensor
  int64_t count, steps, total;
};

// The host side of the layout. `index` holds offsets, order and rows one
// after the other, so that one copy moves it to a device.
struct BatchLayout {
  int64_t count = 0;  // sequences
  int64_t steps = 0;  // the longest length
  int64_t total = 0;  // rows
  std::vector<int64_t> index;

  // The index arrays within a copy of `index` at `base`.
  BatchIndex At(const int64_t* base) const {
    return BatchIndex{
        base, base + steps + 1, base + steps + 1 + count, count, steps, total};
  }
  int64_t Offset(int64_t t) const { return index[t]; }
  // Rows of step t (the sequences running at it).
  int64_t Rows(int64_t t) const { return index[t + 1] - index[t]; }
};

// Shape inference of H0 or C0 (`slot`, when bound): [sequences, width],
// its rows the number of sequences of `lod` at run time.
void CheckRecurrentState(InferShapeContext* ctx, const std::string& slot,
                         int64_t width, const LoD& lod);

// The dtypes of a recurrent op whose Input is `x` (the dtype T): every
// bound slot of `same` must be T. For 16-bit T the bound slots of `float32`
// must be float32 (the kernels compute in it and keep the state so) and
// float32 is returned; otherwise those slots are T and T is returned. A slot
// of another dtype is an error naming the op, the slot, its variable and
// both dtypes.
DataType RecurrentComputeDtype(InferShapeContext* ctx,
                               const std::vector<std::string>& same,
                               const std::vector<std::string>& float32);

// The layout of the op's Input, whose offsets are `lod` (checked by the
// op's shape inference), built in the calling thread's layout: its index
// keeps its capacity, so a steady run allocates nothing. Valid until the
// thread builds the next one. An empty sequence is an error naming the op,
// its Input and the sequence.
const BatchLayout& ThreadBatchLayout(const ExecutionContext& ctx,
                                     const LoD& lod, bool reverse);

// Scratch of a recurrent kernel: `data` (floats of the kernel's type) and
// the batch layout's index, both valid until the kernel returns.
template <typename T>
struct RecurrentScratch {
  T* data;
  BatchIndex index;
};

// The 16-bit kernels (bfloat16, float16) compute in float32: the gates, the
// cell state and every value carried from step to step or summed over steps
// are ComputeType<T> (ops/half_math.h), while the operands of the GEMMs (the
// hidden state, the weight and the gate gradients they multiply) are T, so
// that the products run on 16-bit operands with float32 sums. For float and
// double both types are T and the conversions below are copies.

// v as To: exact from a 16-bit type, rounded once (to nearest even) to one.
template <typename To, typename From>
FLUID_HOSTDEVICE To Convert(From v) {
  if constexpr (std::is_same<To, From>::value) {
    return v;
  } else if constexpr (IsHalfType<From>::value) {
    return static_cast<To>(ToCompute(v));
  } else {
    return FromCompute<To>(static_cast<ComputeType<To>>(v));
  }
}

// Typed pieces of one scratch block, each on a 64-byte boundary. A layout is
// described once and carved twice: without a base to size the block, then
// on the block.
class ScratchCarver {
 public:
  explicit ScratchCarver(void* base = nullptr)
      : base_(static_cast<char*>(base)) {}
  // `count` elements of U (null while sizing, and for a count of 0).
  template <typename U>
  U* Take(int64_t count) {
    if (count <= 0) return nullptr;
    U* p = base_ != nullptr ? reinterpret_cast<U*>(base_ + used_) : nullptr;
    used_ += (sizeof(U) * static_cast<size_t>(count) + 63) / 64 * 64;
    return p;
  }
  // Bytes taken so far, in floats (rounded up).
  int64_t floats() const {
    return static_cast<int64_t>((used_ + sizeof(float) - 1) / sizeof(float));
  }

 private:
  char* base_;
  size_t used_ = 0;
};

// dst row i (width elements) = src row map[i], plus bias when given (added
// in T's compute type).
template <typename T, typename S = T>
struct GatherRows {
  const S* src;
  T* dst;
  const int64_t* map;
  const ComputeType<T>* bias;
  int64_t width;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t i = e / width, j = e % width;
    const S v = src[map[i] * width + j];
    dst[e] = bias != nullptr ? Convert<T>(Convert<ComputeType<T>>(v) + bias[j])
                             : Convert<T>(v);
  }
};

// dst[e] = src[e] as T.
template <typename T, typename S>
struct ConvertValues {
  const S* src;
  T* dst;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    dst[e] = Convert<T>(src[e]);
  }
};

// The previous hidden row of every batch row (width elements), in batch
// order: for step t > 0 the row of step t - 1 at the same position, for
// step 0 the sorted initial state's row (zeros when h0 is null). Stacked so,
// the weight gradient of all steps is one GEMM.
template <typename T, typename S = T>
struct PreviousRows {
  const S* hidden;  // [total, width] in batch order
  const T* h0;      // [count, width] sorted, or null
  T* dst;           // [total, width]
  BatchIndex index;
  int64_t width;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t b = e / width, j = e % width;
    if (b < index.offsets[1]) {  // step 0
      dst[e] = h0 != nullptr ? h0[e] : Convert<T>(ComputeType<T>(0));
      return;
    }
    int64_t lo = 1, hi = index.steps;  // offsets[lo] <= b < offsets[hi]
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      if (index.offsets[mid] <= b) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    const int64_t prev = index.offsets[lo - 1] + (b - index.offsets[lo]);
    dst[e] = Convert<T>(hidden[prev * width + j]);
  }
};

// dst = src plus bias (when given) on every row.
template <typename T>
struct AddRowBias {
  const T* src;
  const T* bias;
  T* dst;
  int64_t width;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    dst[e] = src[e] + (bias != nullptr ? bias[e % width] : T(0));
  }
};

// dst row map[i] = src row i (as T).
template <typename T, typename S = T>
struct ScatterRows {
  const S* src;
  T* dst;
  const int64_t* map;
  int64_t width;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t i = e / width, j = e % width;
    dst[map[i] * width + j] = Convert<T>(src[e]);
  }
};

template <typename T>
struct FillValue {
  T* dst;
  T value;
  FLUID_HOSTDEVICE void operator()(int64_t e) const { dst[e] = value; }
};

}  // namespace ops
}  // namespace fluid
