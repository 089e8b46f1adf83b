// clip_by_norm: Out = X * max_norm / |X| when the L2 norm |X| (over the
// whole tensor, in double) exceeds max_norm, else X (what
// GradientClipByNorm appends per gradient). Not differentiable, as in
// Fluid. X may be a sparse gradient with each row listed once
// (ops/sparse_values.h): the norm is its values', which the rows keep.
#include "ops/clip_functors.h"
#include "ops/op_helpers.h"
#include "ops/sparse_values.h"

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
void ClipByNormValues(const ExecutionContext& ctx, const Tensor& x,
                      Tensor* out) {
  const double max_norm = MaxNorm(ctx);
  const T* in = x.data<T>();
  double sq = 0.0;
  for (int64_t i = 0, n = x.numel(); i < n; ++i)
    sq += static_cast<double>(in[i]) * static_cast<double>(in[i]);
  const T factor = static_cast<T>(ClipByNormFactor(sq, max_norm));
  T* o = out->mutable_data<T>(x.shape());
  ParallelFor(ctx.device(), x.numel(), 1.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) o[i] = in[i] * factor;
  });
}

template <typename T>
void ClipByNormKernel(const ExecutionContext& ctx) {
  if (IsSparseInput(ctx, "X")) {
    const SparseInOut s = SparseValues(ctx, "X", "Out", true);
    return ClipByNormValues<T>(ctx, s.x, s.out);
  }
  ClipByNormValues<T>(ctx, ctx.Input("X"), ctx.Output("Out"));
}

}  // namespace

REGISTER_OP(clip_by_norm)
    .Doc("Out = X scaled down to L2 norm max_norm when its norm exceeds it.")
    .Input("X", "input, or sparse rows listed once each")
    .Output("Out", "same shape as X (sparse when X is); may be X itself")
    .Attr<float>("max_norm", 1.0f, "the largest norm Out may have")
    .SetInferShape([](InferShapeContext* ctx) {
      ShareSparse(ctx, "X", "Out");
      ctx->ShareShape("X", "Out");
    })
    .CPUKernel<float>(ClipByNormKernel<float>)
    .CPUKernel<double>(ClipByNormKernel<double>);

// The CUDA kernel reads the bound through this check too.
float ClipByNormMaxNorm(const ExecutionContext& ctx) { return MaxNorm(ctx); }

}  // namespace ops
}  // namespace fluid
