// cos: Out = cos(X) elementwise (cosine_decay); dX = -dOut * sin(X).
#include <cmath>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void CosKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const T* in = x.data<T>();
  T* out = ctx.Output("Out")->mutable_data<T>(x.shape());
  ParallelFor(ctx.device(), x.numel(), 10.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = std::cos(in[i]);
  });
}

template <typename T>
void CosGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.shape() == x.shape(), ctx.type(), ": Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " differs from X '", ctx.InputName("X"), "' ", x.shape());
  const T* in = x.data<T>();
  const T* g = dout.data<T>();
  T* d = dx->mutable_data<T>(x.shape());
  ParallelFor(ctx.device(), x.numel(), 10.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) d[i] = -g[i] * std::sin(in[i]);
  });
}

}  // namespace

REGISTER_OP(cos)
    .Doc("Out = cos(X).")
    .Input("X", "input")
    .Output("Out", "same shape as X")
    .SetInferShape([](InferShapeContext* ctx) { ctx->ShareShape("X", "Out"); })
    .SetGrad(
        GradSpec("cos_grad").Inputs({"X"}).OutGrads({"Out"}).InGrads({"X"}))
    .CPUKernel<float>(CosKernel<float>)
    .CPUKernel<double>(CosKernel<double>);

REGISTER_GRAD_OP(cos_grad)
    .Doc("dX = -dOut * sin(X).")
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->ShareShape("X", GradSlot("X"));
    })
    .CPUKernel<float>(CosGradKernel<float>)
    .CPUKernel<double>(CosGradKernel<double>);

}  // namespace ops
}  // namespace fluid
