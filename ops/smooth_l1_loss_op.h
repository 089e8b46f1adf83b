// What smooth_l1_loss's CPU kernels (smooth_l1_loss_op.cc) and CUDA kernels
// (smooth_l1_loss_op.cu) share: X viewed as [rows, cols], read and checked
// on the host (defined in smooth_l1_loss_op.cc), and the per-element math.
// Free of Eigen so that nvcc can compile the CUDA kernels that include it.
#pragma once

#include <cstdint>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// X (and Y, the weights, Diff) as [rows, cols]: one loss per row.
struct SmoothL1Dims {
  int64_t rows = 0;
  int64_t cols = 0;
  bool weighted = false;  // InsideWeight and OutsideWeight given
};

// The inputs checked against X: Y and the weights shaped like it; for the
// gradient, Diff shaped like X and Out@GRAD holding one value per row.
SmoothL1Dims ReadSmoothL1Dims(const ExecutionContext& ctx);

// The loss of one (inside-weighted) difference d, sigma2 = sigma^2:
// 0.5 sigma2 d^2 where |d| < 1 / sigma2, else |d| - 0.5 / sigma2.
template <typename T>
FLUID_HOSTDEVICE T SmoothL1(T d, T sigma2) {
  const T a = d < T(0) ? -d : d;
  return a < T(1) / sigma2 ? T(0.5) * sigma2 * d * d : a - T(0.5) / sigma2;
}

// Its derivative: sigma2 d where |d| < 1 / sigma2, else sign(d).
template <typename T>
FLUID_HOSTDEVICE T SmoothL1Grad(T d, T sigma2) {
  const T a = d < T(0) ? -d : d;
  if (a < T(1) / sigma2) return sigma2 * d;
  return d < T(0) ? T(-1) : T(1);
}

}  // namespace ops
}  // namespace fluid
