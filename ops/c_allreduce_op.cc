// c_allreduce: Out = reduce over all ranks of X (sum | avg | max), in place.
// With a Handle output the reduction runs asynchronously on the
// communicator's thread and a later c_wait completes it; without one the op
// waits. `compression` sends float32 values as bf16 or fp16 (gradient
// compression, set by the collective transpiler).
#include "ops/collective_helpers.h"

namespace fluid {
namespace ops {
namespace {

void AllReduceKernel(const ExecutionContext& ctx) {
  Tensor* out = InPlaceOutput(ctx);
  ReduceOp op = ParseReduceOp(ctx.Attr<std::string>("reduce_type"));
  WireFormat wire = ParseWireFormat(ctx.Attr<std::string>("compression"));
  CommHandlePtr handle = CommunicatorOf(ctx)->AllReduceAsync(
      *out, op, ctx.device_context().ReadyFence(), wire);
  HandOffOrWait(ctx, std::move(handle));
}

}  // namespace

REGISTER_OP(c_allreduce)
    .Doc("Reduces X over all ranks into Out (normally X itself).")
    .Input("X", "the tensor to reduce")
    .Output("Out", "the reduced tensor")
    .OptionalOutput("Handle", "the in-flight reduction, for c_wait")
    .Attr<std::string>("reduce_type", "sum", "sum | avg | max")
    .Attr<std::string>("compression", "none",
                       "none | bf16 | fp16: the values travel as 16-bit "
                       "values (float32 X only)")
    .Attr<int32_t>("ring_id", 0, RingIdDoc())
    .InRange(0, kNoUpperBound)
    .SetInferShape([](InferShapeContext* ctx) { ctx->ShareShape("X", "Out"); })
    .AnyPlaceKernel(AllReduceKernel);

}  // namespace ops
}  // namespace fluid
