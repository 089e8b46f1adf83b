// clip_by_norm: Out = X * max_norm / |X| when the L2 norm |X| (over the
// whole tensor, in double) exceeds max_norm, else X (what
// GradientClipByNorm appends per gradient). Not differentiable, as in
// Fluid.
#include "ops/clip_functors.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

float MaxNorm(const ExecutionContext& ctx) {
  const float max_norm = ctx.Attr<float>("max_norm");
  FLUID_ENFORCE(max_norm > 0.0f, ctx.type(), " of '", ctx.InputName("X"),
                "': max_norm must be positive, got ", max_norm);
  return max_norm;
}

template <typename T>
void ClipByNormKernel(const ExecutionContext& ctx) {
  const double max_norm = MaxNorm(ctx);
  const Tensor& x = ctx.Input("X");
  const T* in = x.data<T>();
  double sq = 0.0;
  for (int64_t i = 0, n = x.numel(); i < n; ++i)
    sq += static_cast<double>(in[i]) * static_cast<double>(in[i]);
  const T factor = static_cast<T>(ClipByNormFactor(sq, max_norm));
  T* out = ctx.Output("Out")->mutable_data<T>(x.shape());
  ParallelFor(ctx.device(), x.numel(), 1.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = in[i] * factor;
  });
}

}  // namespace

REGISTER_OP(clip_by_norm)
    .Doc("Out = X scaled down to L2 norm max_norm when its norm exceeds it.")
    .Input("X", "input")
    .Output("Out", "same shape as X; may be X itself")
    .Attr<float>("max_norm", 1.0f, "the largest norm Out may have")
    .SetInferShape([](InferShapeContext* ctx) { ctx->ShareShape("X", "Out"); })
    .CPUKernel<float>(ClipByNormKernel<float>)
    .CPUKernel<double>(ClipByNormKernel<double>);

// The CUDA kernel reads the bound through this check too.
float ClipByNormMaxNorm(const ExecutionContext& ctx) { return MaxNorm(ctx); }

}  // namespace ops
}  // namespace fluid
