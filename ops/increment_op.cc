// increment: Out = X + step for a one-element X; the global step counter of
// the learning-rate schedules (normally in place, once per run) and a while
// loop's counter (int32 or int64: step is truncated to the integer type).
// Not differentiable.
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

// The checked one-element input of increment (shared with the CUDA kernel).
const Tensor& IncrementInput(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  FLUID_ENFORCE(x.numel() == 1, ctx.type(), ": X '", ctx.InputName("X"),
                "' must hold one element, has shape ", x.shape());
  return x;
}

namespace {

template <typename T>
void IncrementKernel(const ExecutionContext& ctx) {
  const Tensor& x = IncrementInput(ctx);
  const T v = x.data<T>()[0] + static_cast<T>(ctx.Attr<float>("step"));
  ctx.Output("Out")->mutable_data<T>(x.shape())[0] = v;
}

}  // namespace

REGISTER_OP(increment)
    .Doc("Out = X + step, X one element.")
    .Input("X", "a one-element tensor (the counter)")
    .Output("Out", "X + step; normally X itself")
    .Attr<float>("step", 1.0f, "the amount added")
    .SetInferShape([](InferShapeContext* ctx) {
      const int64_t n = ctx->GetInputShape("X").numel();
      FLUID_ENFORCE(n < 0 || n == 1, "increment: X '", ctx->InputName("X"),
                    "' must hold one element, has shape ",
                    ctx->GetInputShape("X"));
      ctx->ShareShape("X", "Out");
    })
    .CPUKernel<float>(IncrementKernel<float>)
    .CPUKernel<double>(IncrementKernel<double>)
    .CPUKernel<int32_t>(IncrementKernel<int32_t>)
    .CPUKernel<int64_t>(IncrementKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
