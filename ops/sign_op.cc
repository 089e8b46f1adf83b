// sign: Out = sign(X) (-1, 0 or 1). No gradient: L1 weight decay uses it on
// parameters after the backward pass.
#include "ops/clip_functors.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void SignKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const T* in = x.data<T>();
  T* out = ctx.Output("Out")->mutable_data<T>(x.shape());
  ParallelFor(ctx.device(), x.numel(), 1.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = SignOf(in[i]);
  });
}

}  // namespace

REGISTER_OP(sign)
    .Doc("Out = sign(X): -1, 0 or 1 per element; not differentiable.")
    .Input("X", "input")
    .Output("Out", "same shape as X")
    .SetInferShape([](InferShapeContext* ctx) { ctx->ShareShape("X", "Out"); })
    .CPUKernel<float>(SignKernel<float>)
    .CPUKernel<double>(SignKernel<double>);

}  // namespace ops
}  // namespace fluid
