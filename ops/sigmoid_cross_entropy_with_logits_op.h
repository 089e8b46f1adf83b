// What sigmoid_cross_entropy_with_logits's CPU kernels (.cc) and CUDA
// kernels (.cu) share: the per-element loss and gradient, written once.
// Free of Eigen so that nvcc can compile it.
#pragma once

#include <cmath>
#include <cstdint>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// The loss of logit x against probability z, in the form that neither
// overflows nor loses precision for large |x|:
//   max(x, 0) - x * z + log(1 + exp(-|x|)).
// 0 where z is the ignore_index.
template <typename T>
FLUID_HOSTDEVICE T SigmoidCeLoss(T x, T z, T ignore) {
  if (z == ignore) return T(0);
  const T relu = x > T(0) ? x : T(0);
  return relu - x * z + log1p(exp(-fabs(x)));
}

// d(loss)/dx = sigmoid(x) - z (0 where z is the ignore_index).
template <typename T>
FLUID_HOSTDEVICE T SigmoidCeGrad(T x, T z, T ignore) {
  if (z == ignore) return T(0);
  return T(1) / (T(1) + exp(-x)) - z;
}

// With the normalize attr, every element's loss is divided by the number
// of elements whose label is not the ignore_index (at least 1). Counted on
// the host for the CPU kernels, on the device for the CUDA ones.
template <typename T>
int64_t CountNotIgnored(const T* z, int64_t n, T ignore) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += z[i] != ignore;
  return count > 0 ? count : 1;
}

}  // namespace ops
}  // namespace fluid
