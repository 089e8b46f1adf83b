// floor: Out = floor(X) elementwise (the staircase of the learning-rate
// schedules). Not differentiable: its gradient is 0 almost everywhere.
#include <cmath>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void FloorKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const T* in = x.data<T>();
  T* out = ctx.Output("Out")->mutable_data<T>(x.shape());
  ParallelFor(ctx.device(), x.numel(), 1.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = std::floor(in[i]);
  });
}

}  // namespace

REGISTER_OP(floor)
    .Doc("Out = floor(X); not differentiable.")
    .Input("X", "input")
    .Output("Out", "same shape as X")
    .SetInferShape([](InferShapeContext* ctx) { ctx->ShareShape("X", "Out"); })
    .CPUKernel<float>(FloorKernel<float>)
    .CPUKernel<double>(FloorKernel<double>);

}  // namespace ops
}  // namespace fluid
