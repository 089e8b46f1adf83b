// clip: Out = min(max(X, min), max), Fluid's clip op (also what
// GradientClipByValue appends). Its gradient passes dOut where
// min < X < max and is 0 elsewhere, bounds included. X may be a sparse
// gradient with each row listed once (ops/sparse_values.h): its values are
// clipped, the rows kept. bfloat16 and float16 X compare in float against
// the float bounds (so the gradient's mask is float32's on the same
// values), and a clipped element is the bound rounded once.
#include "ops/clip_op.h"

#include "ops/half_math.h"
#include "ops/op_helpers.h"
#include "ops/sparse_values.h"

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
void ClipValues(const ExecutionContext& ctx, const Tensor& x, Tensor* out) {
  const ClipFunctor<ComputeType<T>> f = MakeClipFunctor<ComputeType<T>>(ctx);
  const T* in = x.data<T>();
  T* o = out->mutable_data<T>(x.shape());
  ParallelFor(ctx.device(), x.numel(), 2.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      o[i] = FromCompute<T>(f.Forward(ToCompute(in[i])));
  });
}

template <typename T>
void ClipKernel(const ExecutionContext& ctx) {
  if (IsSparseInput(ctx, "X")) {
    const SparseInOut s = SparseValues(ctx, "X", "Out", true);
    return ClipValues<T>(ctx, s.x, s.out);
  }
  ClipValues<T>(ctx, ctx.Input("X"), ctx.Output("Out"));
}

void ClipInferShape(InferShapeContext* ctx) {
  ShareSparse(ctx, "X", "Out");
  ctx->ShareShape("X", "Out");
}

template <typename T>
void ClipGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const ClipFunctor<ComputeType<T>> f = MakeClipFunctor<ComputeType<T>>(ctx);
  const ClipGradInputs in = ReadClipGradInputs(ctx);
  const T* x = in.x.data<T>();
  const T* g = in.dout.data<T>();
  T* d = dx->mutable_data<T>(in.x.shape());
  ParallelFor(ctx.device(), in.x.numel(), 2.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      d[i] = FromCompute<T>(f.Backward(ToCompute(x[i]), ToCompute(g[i])));
  });
}

}  // namespace

REGISTER_OP(clip)
    .Doc("Out = min(max(X, min), max).")
    .Input("X", "input, or sparse rows listed once each")
    .Output("Out", "X clipped, same shape (sparse when X is); may be X")
    .Attr<float>("min", 0.0f, "the lower bound")
    .Attr<float>("max", 0.0f, "the upper bound, >= min")
    .SetInferShape(ClipInferShape)
    .SetGrad(
        GradSpec("clip_grad").Inputs({"X"}).OutGrads({"Out"}).InGrads({"X"}))
    .CPUKernel<float>(ClipKernel<float>)
    .CPUKernel<double>(ClipKernel<double>)
    .CPUKernel<bfloat16>(ClipKernel<bfloat16>)
    .CPUKernel<float16>(ClipKernel<float16>);

REGISTER_GRAD_OP(clip_grad)
    .Doc("dX = dOut where min < X < max, else 0.")
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->ShareShape("X", GradSlot("X"));
    })
    .CPUKernel<float>(ClipGradKernel<float>)
    .CPUKernel<double>(ClipGradKernel<double>)
    .CPUKernel<bfloat16>(ClipGradKernel<bfloat16>)
    .CPUKernel<float16>(ClipGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
