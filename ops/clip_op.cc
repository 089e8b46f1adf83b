// clip: Out = min(max(X, min), max), Fluid's clip op (also what
// GradientClipByValue appends). Its gradient passes dOut where
// min < X < max and is 0 elsewhere, bounds included.
#include "ops/clip_op.h"

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

ClipGradInputs ReadClipGradInputs(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.shape() == x.shape(), ctx.type(), ": Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " differs from X '", ctx.InputName("X"), "' ", x.shape());
  return {x, dout};
}

namespace {

template <typename T>
void ClipKernel(const ExecutionContext& ctx) {
  const ClipFunctor<T> f = MakeClipFunctor<T>(ctx);
  const Tensor& x = ctx.Input("X");
  const T* in = x.data<T>();
  T* out = ctx.Output("Out")->mutable_data<T>(x.shape());
  ParallelFor(ctx.device(), x.numel(), 2.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = f.Forward(in[i]);
  });
}

template <typename T>
void ClipGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const ClipFunctor<T> f = MakeClipFunctor<T>(ctx);
  const ClipGradInputs in = ReadClipGradInputs(ctx);
  const T* x = in.x.data<T>();
  const T* g = in.dout.data<T>();
  T* d = dx->mutable_data<T>(in.x.shape());
  ParallelFor(ctx.device(), in.x.numel(), 2.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) d[i] = f.Backward(x[i], g[i]);
  });
}

}  // namespace

REGISTER_OP(clip)
    .Doc("Out = min(max(X, min), max).")
    .Input("X", "input")
    .Output("Out", "X clipped, same shape; may be X itself")
    .Attr<float>("min", 0.0f, "the lower bound")
    .Attr<float>("max", 0.0f, "the upper bound, >= min")
    .SetInferShape([](InferShapeContext* ctx) { ctx->ShareShape("X", "Out"); })
    .SetGrad(
        GradSpec("clip_grad").Inputs({"X"}).OutGrads({"Out"}).InGrads({"X"}))
    .CPUKernel<float>(ClipKernel<float>)
    .CPUKernel<double>(ClipKernel<double>);

REGISTER_GRAD_OP(clip_grad)
    .Doc("dX = dOut where min < X < max, else 0.")
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->ShareShape("X", GradSlot("X"));
    })
    .CPUKernel<float>(ClipGradKernel<float>)
    .CPUKernel<double>(ClipGradKernel<double>);

}  // namespace ops
}  // namespace fluid
