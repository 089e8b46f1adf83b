// What cos_sim's CPU kernels (cos_sim_op.cc) and CUDA kernels
// (cos_sim_op.cu) share: the checked [rows, cols] views of X and Y, read on
// the host (defined in cos_sim_op.cc), and the per-element gradient. Free
// of Eigen so that nvcc can compile the CUDA kernels that include it.
#pragma once

#include <cstdint>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// X viewed as [rows, cols] (dims after the first folded into cols); Y as
// [rows, cols], or [1, cols] broadcast to every row of X.
struct CosSimDims {
  int64_t rows = 0;
  int64_t cols = 0;
  bool y_broadcast = false;
};

// X and Y of cos_sim or cos_sim_grad, checked against each other.
CosSimDims ReadCosSimDims(const ExecutionContext& ctx);

// d(a . b / (|a| |b|)) / da at one element: b / (|a| |b|) - out * a / |a|^2,
// times the row's output gradient. With (a, b) = (x, y) it is dX; with
// (y, x) and the norms swapped it is dY.
template <typename T>
FLUID_HOSTDEVICE T CosSimGrad(T a, T b, T out, T a_norm, T b_norm, T dout) {
  return dout * (b / (a_norm * b_norm) - out * a / (a_norm * a_norm));
}

}  // namespace ops
}  // namespace fluid
