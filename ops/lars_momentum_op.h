// What lars_momentum's CPU kernel (lars_momentum_op.cc) and CUDA kernel
// (lars_momentum_op.cu) share: the update of one element given the norms of
// Param and Grad, and the host-side checks. Free of Eigen so that nvcc can
// compile it.
#pragma once

#include <cmath>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// Fluid's LARS momentum:
//   local_lr = lr * lars_coeff * |Param| / (|Grad| + lars_weight_decay *
//              |Param|)            (lr itself when either norm is 0)
//   Velocity = mu * Velocity + local_lr * (Grad + lars_weight_decay * Param)
//   ParamOut = Param - Velocity
template <typename T>
struct LarsMomentumFunctor {
  double mu, coeff, wd;

  static FLUID_HOSTDEVICE double LocalLr(double lr, double coeff, double wd,
                                         double p_norm, double g_norm) {
    return p_norm > 0 && g_norm > 0
               ? lr * coeff * p_norm / (g_norm + wd * p_norm)
               : lr;
  }

  FLUID_HOSTDEVICE void operator()(T local_lr, T p, T g, T v, T* p_out,
                                   T* v_out) const {
    const T vn =
        static_cast<T>(mu) * v + local_lr * (g + static_cast<T>(wd) * p);
    *v_out = vn;
    *p_out = p - vn;
  }
};

struct LarsMomentumArgs {
  const Tensor& param;
  const Tensor& grad;
  const Tensor& velocity;
  LarsMomentumFunctor<double> attrs;  // mu, lars_coeff, lars_weight_decay
};

LarsMomentumArgs ReadLarsMomentumArgs(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
