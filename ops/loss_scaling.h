// What the two ops of dynamic loss scaling share between their CPU kernels
// (check_finite_and_unscale_op.cc, update_loss_scaling_op.cc) and their
// CUDA kernels (the .cu files): the per-element rule of the unscale, the
// loss scaling's state machine, and the host-side reading of their inputs.
// The rules are FLUID_HOSTDEVICE, written once, so that both places compute
// the same bits. Free of Eigen so that nvcc can compile what includes it.
//
// Both ops take a list X of gradients, dense or sparse rows (SelectedRows,
// from lookup_table with is_sparse), each of its own float dtype (float32,
// float64, float16, bfloat16), and write a list Out, position by position
// (Out[i] is usually X[i] itself).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// The type an element of T is computed in: float64 stays float64, the
// 16-bit types are computed in float32.
template <typename T>
struct LossScalingCompute {
  using type = float;
};
template <>
struct LossScalingCompute<double> {
  using type = double;
};

// False for an infinity or a NaN (both give NaN when subtracted from
// themselves; a finite value gives 0). Written without <cmath> so that the
// host compiler and nvcc read it alike.
template <typename C>
FLUID_HOSTDEVICE bool IsFiniteValue(C v) {
  return v - v == C(0);
}

// Out = X / scale for one element, computed in float32 (float64 for a
// float64 X) and rounded once to X's type; returns whether X was finite.
// Dividing in float32 and rounding the quotient to a 16-bit type gives the
// correctly rounded 16-bit quotient (24 bits >= 2 * 11 + 2).
template <typename T>
FLUID_HOSTDEVICE bool UnscaleElement(const T* x, T* out, int64_t i,
                                     typename LossScalingCompute<T>::type s) {
  using C = typename LossScalingCompute<T>::type;
  const C v = static_cast<C>(x[i]);
  out[i] = static_cast<T>(v / s);
  return IsFiniteValue(v);
}

// update_loss_scaling's attributes, checked (see CheckLossScalingAttrs).
struct LossScalingAttrs {
  int32_t incr_every_n_steps;
  int32_t decr_every_n_nan_or_inf;
  float incr_ratio;
  float decr_ratio;
};

// The loss scaling's state after one step.
template <typename S>
struct LossScalingState {
  S scaling;
  int32_t good_steps;
  int32_t bad_steps;
};

// One step of the state machine, as Fluid defines it. A step whose
// gradients hold an Inf or a NaN resets the good steps and counts a bad
// one; the decr_every_n_nan_or_inf-th bad step in a row multiplies the
// scaling by decr_ratio (never below 1) and resets the count. A finite
// step resets the bad steps and counts a good one; the
// incr_every_n_steps-th good step in a row multiplies the scaling by
// incr_ratio (the scaling stays when the product is not finite) and resets
// the count. A count that starts at or past its threshold (the attr was
// lowered between runs) fires on its next step. The products are computed
// in the scaling's type S.
template <typename S>
FLUID_HOSTDEVICE LossScalingState<S> NextLossScaling(
    bool found_infinite, S prev, int32_t good, int32_t bad,
    const LossScalingAttrs& a) {
  LossScalingState<S> next{prev, 0, 0};
  if (found_infinite) {
    next.bad_steps = bad + 1;
    if (next.bad_steps >= a.decr_every_n_nan_or_inf) {
      const S lowered = prev * static_cast<S>(a.decr_ratio);
      next.scaling = lowered < S(1) ? S(1) : lowered;
      next.bad_steps = 0;
    }
  } else {
    next.good_steps = good + 1;
    if (next.good_steps >= a.incr_every_n_steps) {
      const S raised = prev * static_cast<S>(a.incr_ratio);
      if (IsFiniteValue(raised)) next.scaling = raised;
      next.good_steps = 0;
    }
  }
  return next;
}

// ---- host side, defined in check_finite_and_unscale_op.cc

// The values of X[i] and Out[i]: X's tensor (or its rows' values) and
// Out's, which takes X's shape and dtype, is allocated on the kernel's
// place and, for sparse rows, takes X's rows and height (nothing to copy
// when Out[i] is X[i]).
struct GradPair {
  const Tensor* x;
  Tensor* out;
  bool in_place;  // out's memory is x's
};
std::vector<GradPair> LossScalingGrads(const ExecutionContext& ctx);

// Shape inference of X and Out, for both ops: as many Out as X, Out[i] is
// X[i] or a var named nowhere else in X and Out, every X of a float dtype;
// Out[i] takes X[i]'s shape, dtype and sparseness.
void InferLossScalingGrads(InferShapeContext* ctx);

// Shape inference of a one-element input `slot`: float32 or float64 (a
// loss scaling) when `float_value`, else int32 (a flag, a step count).
void CheckLossScalingScalar(InferShapeContext* ctx, const std::string& slot,
                            bool float_value);

// ---- host side, defined in update_loss_scaling_op.cc

// The attrs of an update_loss_scaling op, checked: an error names the op,
// the attr, its value and what is allowed.
LossScalingAttrs CheckLossScalingAttrs(const AttributeMap& attrs,
                                       const std::string& op_type);

}  // namespace ops
}  // namespace fluid
