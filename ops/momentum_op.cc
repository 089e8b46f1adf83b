// momentum: SGD with momentum, exactly as torch.optim.SGD(momentum=mu,
// dampening=0, nesterov=use_nesterov, weight_decay=weight_decay):
//
//   g' = Grad + weight_decay * Param
//   v  = mu * Velocity + g'
//   ParamOut = Param - lr * v                (nesterov: lr * (g' + mu * v))
//
// torch creates its momentum buffer on the first step as a copy of g'; that
// equals mu * 0 + g', so starting Velocity at zero (what the startup program
// does) reproduces torch step for step. ParamOut and VelocityOut are normally
// bound to Param and Velocity (in-place updates); every element is read
// before it is written, so either binding gives the same result. A sparse
// Grad (SelectedRows) updates every row, a row it misses as if its gradient
// were zero (ops/sparse_grad.h): the result of the dense gradient.
#include "ops/momentum_op.h"

#include "ops/op_helpers.h"
#include "ops/optimizer_functors.h"
#include "ops/sparse_grad.h"

namespace fluid {
namespace ops {

MomentumArgs ReadMomentumArgs(const ExecutionContext& ctx) {
  const float mu = ctx.Attr<float>("mu");
  const float wd = ctx.Attr<float>("weight_decay");
  const bool nesterov = ctx.Attr<bool>("use_nesterov");
  const Tensor& param = ctx.Input("Param");
  const Tensor& grad = ctx.Input("Grad");
  const Tensor& velocity = ctx.Input("Velocity");
  const int64_t n = param.numel();
  FLUID_ENFORCE(grad.numel() == n && velocity.numel() == n, "momentum: Param '",
                ctx.InputName("Param"), "' ", param.shape(), ", Grad '",
                ctx.InputName("Grad"), "' ", grad.shape(), " and Velocity '",
                ctx.InputName("Velocity"), "' ", velocity.shape(),
                " must have the same shape");
  return {param, grad, velocity, mu, wd, nesterov};
}

namespace {

void MomentumInferShape(InferShapeContext* ctx) {
  CheckLikeParam(ctx, "Grad");
  CheckLikeParam(ctx, "Velocity");
  CheckOneElement(ctx, "LearningRate");
  ctx->ShareShape("Param", "ParamOut");
  ctx->ShareShape("Velocity", "VelocityOut");
}

template <typename T>
void SparseMomentumKernel(const ExecutionContext& ctx,
                          const MomentumFunctor<T>& f) {
  MergedGrad<T>& m = ThreadMergedGrad<T>();
  MergeSparseGrad(ctx, &m);
  T* p = UpdatedInPlace<T>(ctx, "Param", "ParamOut");
  T* v = UpdatedInPlace<T>(ctx, "Velocity", "VelocityOut");
  ForEachSparseElement(m, false,
                       [&](int64_t i, T g) { f(p[i], g, v[i], &p[i], &v[i]); });
}

template <typename T>
void MomentumKernel(const ExecutionContext& ctx) {
  const T lr = static_cast<T>(ReadScalar(ctx, "LearningRate"));
  if (HasSparseGrad(ctx)) {
    const MomentumFunctor<T> f{lr, static_cast<T>(ctx.Attr<float>("mu")),
                               static_cast<T>(ctx.Attr<float>("weight_decay")),
                               ctx.Attr<bool>("use_nesterov")};
    return SparseMomentumKernel<T>(ctx, f);
  }
  const MomentumArgs a = ReadMomentumArgs(ctx);
  const T* p = a.param.data<T>();
  const T* g = a.grad.data<T>();
  const T* v = a.velocity.data<T>();
  T* p_out = ctx.Output("ParamOut")->mutable_data<T>(a.param.shape());
  T* v_out = ctx.Output("VelocityOut")->mutable_data<T>(a.velocity.shape());
  // Every element depends only on its own index: safe when the outputs are
  // the inputs (in place).
  const MomentumFunctor<T> f{lr, static_cast<T>(a.mu),
                             static_cast<T>(a.weight_decay), a.nesterov};
  ParallelFor(ctx.device(), a.param.numel(), 6.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f(p[i], g[i], v[i], &p_out[i], &v_out[i]);
  });
}

}  // namespace

REGISTER_OP(momentum)
    .Doc(
        "SGD with momentum and optional Nesterov and L2 weight decay, as "
        "torch.optim.SGD with dampening 0.")
    .Input("Param", "the parameter")
    .Input("Grad", "its gradient, shaped like Param (dense or sparse rows)")
    .Input("Velocity", "the momentum buffer, shaped like Param; starts at 0")
    .Input("LearningRate", "a one-element float32 or float64 tensor")
    .Output("ParamOut", "the updated parameter; normally Param itself")
    .Output("VelocityOut", "the updated buffer; normally Velocity itself")
    .Attr<float>("mu", 0.9f, "momentum factor")
    .InRange(0, kNoUpperBound)
    .Attr<bool>("use_nesterov", false, "use Nesterov momentum")
    .Attr<float>("weight_decay", 0.0f,
                 "L2 penalty: weight_decay * Param is added to the gradient")
    .InRange(0, kNoUpperBound)
    .SetInferShape(MomentumInferShape)
    .CPUKernel<float>(MomentumKernel<float>)
    .CPUKernel<double>(MomentumKernel<double>);

}  // namespace ops
}  // namespace fluid
