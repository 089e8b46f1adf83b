// c_broadcast: every rank's Out becomes rank `root`'s X.
#include "ops/collective_helpers.h"

namespace fluid {
namespace ops {
namespace {

void BroadcastKernel(const ExecutionContext& ctx) {
  Tensor* out = InPlaceOutput(ctx);
  CommunicatorOf(ctx)
      ->BroadcastAsync(*out, ctx.Attr<int32_t>("root"),
                       ctx.device_context().ReadyFence())
      ->Wait();
}

}  // namespace

REGISTER_OP(c_broadcast)
    .Doc("Broadcasts X from rank `root` into Out (normally X itself).")
    .Input("X")
    .Output("Out")
    .Attr<int32_t>("root", 0,
                   "the rank (in the ring) whose value everyone takes")
    .InRange(0, kNoUpperBound)
    .Attr<int32_t>("ring_id", 0, RingIdDoc())
    .InRange(0, kNoUpperBound)
    .SetInferShape([](InferShapeContext* ctx) { ctx->ShareShape("X", "Out"); })
    .AnyPlaceKernel(BroadcastKernel);

}  // namespace ops
}  // namespace fluid
