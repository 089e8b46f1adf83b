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
#include <vector>

#include "ops/activation_functors.h"
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

// dst row i (width elements) = src row map[i], plus bias when given.
template <typename T>
struct GatherRows {
  const T* src;
  T* dst;
  const int64_t* map;
  const T* bias;
  int64_t width;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t i = e / width, j = e % width;
    dst[e] = src[map[i] * width + j] + (bias != nullptr ? bias[j] : T(0));
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

// dst row map[i] = src row i.
template <typename T>
struct ScatterRows {
  const T* src;
  T* dst;
  const int64_t* map;
  int64_t width;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t i = e / width, j = e % width;
    dst[map[i] * width + j] = src[e];
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
