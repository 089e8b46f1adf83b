// sequence_pool's per-element math, written once for the CPU and CUDA
// kernels: one output element pools one column of a sequence's rows.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

using std::sqrt;

enum class SequencePoolType { kAverage, kSum, kSqrt, kMax, kLast, kFirst };

// The op's `pooltype` attr, checked (an error lists the known names).
SequencePoolType ReadSequencePoolType(const AttributeMap& attrs,
                                      const std::string& op);

// Pools column `col` of rows [begin, end) of `x` (rows of `width`
// elements). An empty sequence pools to `pad`. For kMax, *arg is the row
// holding the maximum (the first of equal ones); -1 otherwise.
template <typename T>
FLUID_HOSTDEVICE T PoolSequence(SequencePoolType type, const T* x,
                                int64_t width, int64_t col, int64_t begin,
                                int64_t end, T pad, int32_t* arg) {
  *arg = -1;
  if (end <= begin) return pad;
  switch (type) {
    case SequencePoolType::kFirst:
      return x[begin * width + col];
    case SequencePoolType::kLast:
      return x[(end - 1) * width + col];
    case SequencePoolType::kMax: {
      int64_t best = begin;
      for (int64_t r = begin + 1; r < end; ++r)
        if (x[r * width + col] > x[best * width + col]) best = r;
      *arg = static_cast<int32_t>(best);
      return x[best * width + col];
    }
    default:
      break;
  }
  T sum = 0;
  for (int64_t r = begin; r < end; ++r) sum += x[r * width + col];
  const T n = static_cast<T>(end - begin);
  if (type == SequencePoolType::kAverage) return sum / n;
  if (type == SequencePoolType::kSqrt) return sum / sqrt(n);
  return sum;
}

// d out / d x[row, col] for an output pooled from rows [begin, end) (which
// hold `row`); `arg` is that output's MaxIndex.
template <typename T>
FLUID_HOSTDEVICE T PoolGradWeight(SequencePoolType type, int64_t row,
                                  int64_t begin, int64_t end, int32_t arg) {
  const T n = static_cast<T>(end - begin);
  switch (type) {
    case SequencePoolType::kAverage:
      return T(1) / n;
    case SequencePoolType::kSqrt:
      return T(1) / sqrt(n);
    case SequencePoolType::kMax:
      return row == arg ? T(1) : T(0);
    case SequencePoolType::kLast:
      return row == end - 1 ? T(1) : T(0);
    case SequencePoolType::kFirst:
      return row == begin ? T(1) : T(0);
    default:
      return T(1);
  }
}

}  // namespace ops
}  // namespace fluid
