// The per-element tests of isinf, isnan and isfinite, shared by their CPU
// kernels (isfinite_op.cc) and CUDA kernels (isfinite_op.cu). Written with
// arithmetic only, so host and device compile the same expression.
#pragma once

#include "ops/hostdevice.h"

namespace fluid {
namespace ops {

// Which elements an op counts: isinf the infinities, isnan the NaNs,
// isfinite the elements that are neither (its Out is whether all are).
enum class FiniteTest { kInf, kNan, kNonFinite };

template <typename T>
FLUID_HOSTDEVICE bool FailsFiniteTest(T x, FiniteTest test) {
  const bool nan = x != x;
  // x - x is 0 for a finite x, NaN for an infinity or a NaN.
  const bool non_finite = !(x - x == x - x);
  switch (test) {
    case FiniteTest::kInf:
      return non_finite && !nan;
    case FiniteTest::kNan:
      return nan;
    default:
      return non_finite;
  }
}

}  // namespace ops
}  // namespace fluid
