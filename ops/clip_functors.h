// The per-element rules of sign, clip and clip_by_norm, shared by their CPU
// kernels (the .cc files) and CUDA kernels (the .cu files).
#pragma once

#include <cmath>

#include "ops/hostdevice.h"

namespace fluid {
namespace ops {

// Out = -1, 0 or 1 as X is negative, zero or positive.
template <typename T>
FLUID_HOSTDEVICE T SignOf(T x) {
  return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
}

// Out = min(max(X, lo), hi); dX = dOut where lo < X < hi, else 0 (Fluid's
// rule: the gradient is 0 on the bounds themselves).
template <typename T>
struct ClipFunctor {
  T lo, hi;
  FLUID_HOSTDEVICE T Forward(T x) const {
    return x < lo ? lo : (x > hi ? hi : x);
  }
  FLUID_HOSTDEVICE T Backward(T x, T dout) const {
    return x > lo && x < hi ? dout : T(0);
  }
};

// The factor clip_by_norm scales X by: max_norm / norm when the L2 norm of
// X exceeds max_norm, else 1.
FLUID_HOSTDEVICE double ClipByNormFactor(double squared_norm, double max_norm) {
  const double norm = std::sqrt(squared_norm);
  return norm > max_norm ? max_norm / norm : 1.0;
}

}  // namespace ops
}  // namespace fluid
