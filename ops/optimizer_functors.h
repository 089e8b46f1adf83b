// The per-element update rules of the optimizers (sgd, momentum, adam),
// shared by the CPU kernels (sgd_op.cc, momentum_op.cc, adam_op.cc) and the
// CUDA kernels (the matching .cu files), so that each formula is written once.
// Each functor reads all of an element's inputs before writing its outputs,
// so the outputs may be the inputs (the usual in-place binding).
#pragma once

#include <cmath>

#include "ops/hostdevice.h"

namespace fluid {
namespace ops {

// ParamOut = Param - lr * Grad.
template <typename T>
struct SgdFunctor {
  T lr;
  FLUID_HOSTDEVICE T operator()(T p, T g) const { return p - lr * g; }
};

// torch.optim.SGD with momentum (dampening 0):
//   g' = Grad + weight_decay * Param   (g' = Grad when weight_decay is 0)
//   v  = mu * Velocity + g'
//   ParamOut = Param - lr * v           (nesterov: lr * (g' + mu * v))
template <typename T>
struct MomentumFunctor {
  T lr, mu, wd;
  bool nesterov;
  FLUID_HOSTDEVICE void operator()(T p, T g, T v, T* p_out, T* v_out) const {
    const T gw = wd == T(0) ? g : g + wd * p;
    const T vn = mu * v + gw;
    *v_out = vn;
    *p_out = nesterov ? p - lr * (gw + mu * vn) : p - lr * vn;
  }
};

// torch.optim.Adam / AdamW (see adam_op.cc). The step scalars (bias
// corrections, step size, decoupled decay) come from double arithmetic, as
// torch computes them in Python floats, then are rounded to T once.
template <typename T>
struct AdamFunctor {
  T b1, b2, one_minus_b1, one_minus_b2, eps, step_size, bc2_sqrt, l2, decay;
  bool decoupled;

  // lr, beta1_pow = beta1^t and beta2_pow = beta2^t for this step t;
  // beta1, beta2, epsilon and weight_decay are the op's attrs.
  static FLUID_HOSTDEVICE AdamFunctor Make(double lr, double beta1_pow,
                                           double beta2_pow, double beta1,
                                           double beta2, double epsilon,
                                           double weight_decay,
                                           bool decoupled) {
    AdamFunctor f;
    f.b1 = static_cast<T>(beta1);
    f.b2 = static_cast<T>(beta2);
    f.one_minus_b1 = static_cast<T>(1.0 - beta1);
    f.one_minus_b2 = static_cast<T>(1.0 - beta2);
    f.eps = static_cast<T>(epsilon);
    f.step_size = static_cast<T>(lr / (1.0 - beta1_pow));
    f.bc2_sqrt = static_cast<T>(std::sqrt(1.0 - beta2_pow));
    f.l2 = decoupled ? T(0) : static_cast<T>(weight_decay);
    f.decay = decoupled ? static_cast<T>(1.0 - lr * weight_decay) : T(1);
    f.decoupled = decoupled;
    return f;
  }

  FLUID_HOSTDEVICE void operator()(T p, T g, T m1, T m2, T* p_out, T* m1_out,
                                   T* m2_out) const {
    T pi = p;
    if (decoupled) pi *= decay;
    const T gi = l2 != T(0) ? g + l2 * pi : g;
    const T mi = b1 * m1 + one_minus_b1 * gi;
    const T vi = b2 * m2 + one_minus_b2 * gi * gi;
    *m1_out = mi;
    *m2_out = vi;
    const T denom = std::sqrt(vi) / bc2_sqrt + eps;
    *p_out = pi - step_size * mi / denom;
  }
};

}  // namespace ops
}  // namespace fluid
