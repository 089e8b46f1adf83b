// c_reducescatter: Out = this rank's block of the reduction over all ranks
// of X (sum | avg | max). X holds `nranks` blocks along dim 0; Out is one
// block. With a Handle output the collective runs asynchronously on the
// communicator's thread and a later c_wait completes it; without one the op
// waits. Each block is reduced in one place, which is what makes the
// ranks' copies identical once they gather the blocks again (c_allgather).
// `compression` sends float32 values as bf16 or fp16 (gradient compression
// under sharding, set by the collective transpiler).
#include "ops/collective_helpers.h"

namespace fluid {
namespace ops {
namespace {

void ReduceScatterKernel(const ExecutionContext& ctx) {
  const int nranks = ctx.Attr<int32_t>("nranks");
  Communicator* comm = CommunicatorOf(ctx);
  CheckRanks(comm, nranks, "c_reducescatter");
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  FLUID_ENFORCE(out != &x, "c_reducescatter: Out must not be X");
  out->set_dtype(x.dtype());
  out->Resize(BlockShape(x.shape(), nranks, "c_reducescatter"));
  out->raw_mutable_data(ctx.place());
  ReduceOp op = ParseReduceOp(ctx.Attr<std::string>("reduce_type"));
  WireFormat wire = ParseWireFormat(ctx.Attr<std::string>("compression"));
  CommHandlePtr handle = comm->ReduceScatterAsync(
      x, *out, op, ctx.device_context().ReadyFence(), wire);
  HandOffOrWait(ctx, std::move(handle));
}

}  // namespace

REGISTER_OP(c_reducescatter)
    .Doc("Reduces X over all ranks; Out receives this rank's block.")
    .Input("X", "nranks blocks along dim 0")
    .Output("Out", "this rank's block of the reduction")
    .OptionalOutput("Handle", "the in-flight collective, for c_wait")
    .Attr<std::string>("reduce_type", "sum", "sum | avg | max")
    .Attr<std::string>("compression", "none",
                       "none | bf16 | fp16: the values travel as 16-bit "
                       "values (float32 X only)")
    .Attr<int32_t>("nranks", 1, "the number of ranks (blocks of X)")
    .InRange(1, kNoUpperBound)
    .Attr<int32_t>("ring_id", 0, RingIdDoc())
    .InRange(0, kNoUpperBound)
    .SetInferShape([](InferShapeContext* ctx) {
      BlockInferShape(ctx, "c_reducescatter");
    })
    .AnyPlaceKernel(ReduceScatterKernel);

}  // namespace ops
}  // namespace fluid
