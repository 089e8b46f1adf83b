// lars_momentum: momentum with a layer-wise adaptive learning rate (LARS),
// as Fluid's LarsMomentumOptimizer (the rule is LarsMomentumFunctor in
// lars_momentum_op.h). The norms of Param and Grad are taken over the
// whole tensor, accumulated in double. torch.optim has no LARS.
#include "ops/lars_momentum_op.h"

#include <cmath>

#include "ops/op_helpers.h"
#include "ops/state_optimizer.h"

namespace fluid {
namespace ops {

LarsMomentumArgs ReadLarsMomentumArgs(const ExecutionContext& ctx) {
  static const char* const kSlots[] = {"Velocity"};
  const StateOptimizerInputs in = ReadStateOptimizerInputs(ctx, kSlots, 1);
  LarsMomentumFunctor<double> attrs;
  attrs.mu = ctx.Attr<float>("mu");
  attrs.coeff = ctx.Attr<float>("lars_coeff");
  attrs.wd = ctx.Attr<float>("lars_weight_decay");
  return {*in.param, *in.grad, *in.states[0], attrs};
}

namespace {

template <typename T>
double Norm(const T* x, int64_t n) {
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i)
    acc += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return std::sqrt(acc);
}

template <typename T>
void LarsMomentumKernel(const ExecutionContext& ctx) {
  const double lr = ReadScalar(ctx, "LearningRate");
  const LarsMomentumArgs a = ReadLarsMomentumArgs(ctx);
  const int64_t n = a.param.numel();
  const T* p = a.param.data<T>();
  const T* g = a.grad.data<T>();
  const T* v = a.velocity.data<T>();
  const T local_lr = static_cast<T>(LarsMomentumFunctor<T>::LocalLr(
      lr, a.attrs.coeff, a.attrs.wd, Norm(p, n), Norm(g, n)));
  LarsMomentumFunctor<T> f;
  f.mu = a.attrs.mu;
  f.coeff = a.attrs.coeff;
  f.wd = a.attrs.wd;
  T* p_out = ctx.Output("ParamOut")->mutable_data<T>(a.param.shape());
  T* v_out = ctx.Output("VelocityOut")->mutable_data<T>(a.velocity.shape());
  ParallelFor(ctx.device(), n, 6.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      f(local_lr, p[i], g[i], v[i], &p_out[i], &v_out[i]);
  });
}

void LarsMomentumInferShape(InferShapeContext* ctx) {
  static const char* const kSlots[] = {"Velocity"};
  StateOptimizerInferShape(ctx, kSlots, 1, true, nullptr);
}

}  // namespace

REGISTER_OP(lars_momentum)
    .Doc("Momentum with a layer-wise adaptive learning rate (LARS).")
    .Input("Param", "the parameter")
    .Input("Grad", "its gradient, shaped like Param")
    .Input("Velocity", "the momentum buffer, shaped like Param; starts at 0")
    .Input("LearningRate", "a one-element float32 or float64 tensor")
    .Output("ParamOut", "the updated parameter; normally Param itself")
    .Output("VelocityOut", "the updated buffer; normally Velocity itself")
    .Attr<float>("mu", 0.9f, "momentum factor")
    .InRange(0, kNoUpperBound)
    .Attr<float>("lars_coeff", 0.001f, "the trust coefficient")
    .Attr<float>("lars_weight_decay", 0.0005f,
                 "L2 penalty, also in the local learning rate")
    .SetInferShape(LarsMomentumInferShape)
    .CPUKernel<float>(LarsMomentumKernel<float>)
    .CPUKernel<double>(LarsMomentumKernel<double>);

}  // namespace ops
}  // namespace fluid
