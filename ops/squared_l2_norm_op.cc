// squared_l2_norm: Out[1] = sum of X^2, accumulated in double (the per
// gradient term of GradientClipByGlobalNorm). dX = 2 * dOut[0] * X. X may
// be a sparse gradient with each row listed once (ops/sparse_values.h): the
// sum is over its values (the forward only; a sparse X is a gradient, which
// is not differentiated again).
#include "ops/op_helpers.h"
#include "ops/sparse_values.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void SquaredL2NormKernel(const ExecutionContext& ctx) {
  const Tensor& x = DistinctRowsOrTensor(ctx, "X");
  const T* in = x.data<T>();
  double acc = 0.0;
  for (int64_t i = 0, n = x.numel(); i < n; ++i)
    acc += static_cast<double>(in[i]) * static_cast<double>(in[i]);
  ctx.Output("Out")->mutable_data<T>(Shape{1})[0] = static_cast<T>(acc);
}

template <typename T>
void SquaredL2NormGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.numel() == 1, ctx.type(), ": Out@GRAD '",
                ctx.InputName(GradSlot("Out")),
                "' must hold one element, has shape ", dout.shape());
  const T two_g = T(2) * dout.data<T>()[0];
  const T* in = x.data<T>();
  T* d = dx->mutable_data<T>(x.shape());
  ParallelFor(ctx.device(), x.numel(), 1.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) d[i] = two_g * in[i];
  });
}

}  // namespace

REGISTER_OP(squared_l2_norm)
    .Doc("Out = sum of X^2, one element.")
    .Input("X", "input, or sparse rows listed once each")
    .Output("Out", "shape [1]")
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->SetOutputShape("Out", Shape{1});
      ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
    })
    .SetGrad(GradSpec("squared_l2_norm_grad")
                 .Inputs({"X"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(SquaredL2NormKernel<float>)
    .CPUKernel<double>(SquaredL2NormKernel<double>);

REGISTER_GRAD_OP(squared_l2_norm_grad)
    .Doc("dX = 2 * dOut[0] * X.")
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->ShareShape("X", GradSlot("X"));
    })
    .CPUKernel<float>(SquaredL2NormGradKernel<float>)
    .CPUKernel<double>(SquaredL2NormGradKernel<double>);

}  // namespace ops
}  // namespace fluid
