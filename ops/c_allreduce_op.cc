// c_allreduce: Out = reduce over all ranks of X (sum | avg | max), in place.
// With a Handle output the reduction runs asynchronously on the
// communicator's thread and a later c_wait completes it; without one the op
// waits.
#include "ops/collective_helpers.h"

namespace fluid {
namespace ops {
namespace {

void AllReduceKernel(const ExecutionContext& ctx) {
  Tensor* out = InPlaceOutput(ctx);
  ReduceOp op = ParseReduceOp(ctx.Attr<std::string>("reduce_type"));
  CommHandlePtr handle = CommunicatorOf(ctx)->AllReduceAsync(
      *out, op, ctx.device_context().ReadyFence());
  if (ctx.HasOutput("Handle")) {
    *ctx.OutputVar("Handle")->GetMutable<CommHandlePtr>() = std::move(handle);
  } else {
    handle->Wait();
  }
}

}  // namespace

REGISTER_OP(c_allreduce)
    .Doc("Reduces X over all ranks into Out (normally X itself).")
    .Input("X", "the tensor to reduce")
    .Output("Out", "the reduced tensor")
    .OptionalOutput("Handle", "the in-flight reduction, for c_wait")
    .Attr<std::string>("reduce_type", "sum", "sum | avg | max")
    .SetInferShape([](InferShapeContext* ctx) { ctx->ShareShape("X", "Out"); })
    .AnyPlaceKernel(AllReduceKernel);

}  // namespace ops
}  // namespace fluid
