// c_allgather: Out = every rank's X concatenated along dim 0 in rank order.
// With a Handle output the collective runs asynchronously on the
// communicator's thread and a later c_wait completes it; without one the op
// waits. It puts back together the blocks c_reducescatter split, so X may be
// a view (shard_view) of this rank's block of Out, gathered in place.
#include "ops/collective_helpers.h"

namespace fluid {
namespace ops {
namespace {

void AllGatherKernel(const ExecutionContext& ctx) {
  const int nranks = ctx.Attr<int32_t>("nranks");
  Communicator* comm = CommunicatorOf(ctx);
  CheckRanks(comm, nranks, "c_allgather");
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  FLUID_ENFORCE(out != &x, "c_allgather: Out must not be X");
  Shape full = x.shape();
  full[0] *= nranks;
  // Out may already be the buffer X is a view of (a shard gathered in
  // place); then it keeps its buffer.
  if (!out->initialized() || out->dtype() != x.dtype() ||
      out->numel() != x.numel() * nranks) {
    out->set_dtype(x.dtype());
    out->Resize(full);
  }
  out->raw_mutable_data(ctx.place());
  CommHandlePtr handle =
      comm->AllGatherAsync(x, *out, ctx.device_context().ReadyFence());
  HandOffOrWait(ctx, std::move(handle));
}

}  // namespace

REGISTER_OP(c_allgather)
    .Doc("Out = every rank's X, concatenated along dim 0 in rank order.")
    .Input("X", "this rank's block (may be a view of its block of Out)")
    .Output("Out", "nranks blocks along dim 0")
    .OptionalOutput("Handle", "the in-flight collective, for c_wait")
    .Attr<int32_t>("nranks", 1, "the number of ranks")
    .InRange(1, kNoUpperBound)
    .Attr<int32_t>("ring_id", 0, RingIdDoc())
    .InRange(0, kNoUpperBound)
    .SetInferShape([](InferShapeContext* ctx) {
      Shape out = ctx->GetInputShape("X");
      FLUID_ENFORCE(out.rank() >= 1, "c_allgather: X must have a dim");
      if (out[0] >= 0) out[0] *= ctx->Attr<int32_t>("nranks");
      ctx->SetOutputShape("Out", out);
      ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
    })
    .AnyPlaceKernel(AllGatherKernel);

}  // namespace ops
}  // namespace fluid
