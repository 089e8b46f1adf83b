// send_v2 / recv_v2: a tensor from one rank to another, the pipeline's
// activations and gradients (transpiler/pipeline.h). Both run on a ring of
// two ranks (one per cut and direction). A message is one collective of the
// ring (Communicator::SendTensorAsync): the dtype and shape first, so the
// receiver needs to know neither beforehand, a batch of sequences' offsets
// (LoD), then the values; the ring's collective check, flight recorder and
// stall watchdog see every message (a mismatch is an error, a stuck peer is
// named). A send or receive with a Handle output runs in the background
// until its c_wait: a receive issued early (the pipeline issues each one
// right after the previous message of its channel arrived) moves its
// values while this rank computes, and its c_wait puts them in Out.
// Without a Handle, either op waits.
#include <chrono>

#include "ops/collective_helpers.h"

namespace fluid {
namespace ops {
namespace {

Communicator* PairOf(const ExecutionContext& ctx, int* peer) {
  Communicator* comm = CommunicatorOf(ctx);
  *peer = ctx.Attr<int32_t>("peer");
  FLUID_ENFORCE(comm->size() == 2, ctx.type(), ": ring ",
                ctx.Attr<int32_t>("ring_id"), " has ", comm->size(),
                " ranks; a send or receive runs on a ring of two");
  FLUID_ENFORCE(*peer >= 0 && *peer < 2 && *peer != comm->rank(), ctx.type(),
                ": peer ", *peer, " is not the other rank of ring ",
                ctx.Attr<int32_t>("ring_id"), " (this rank is ", comm->rank(),
                ")");
  return comm;
}

void SendKernel(const ExecutionContext& ctx) {
  int peer = 0;
  Communicator* comm = PairOf(ctx, &peer);
  const Tensor& x = ctx.Input("X");
  FLUID_ENFORCE(x.initialized(), "send_v2: ", Quote(ctx.InputName("X")),
                " holds no value");
  FLUID_ENFORCE(x.shape().rank() <= Shape::kMaxRank,
                "send_v2: ", Quote(ctx.InputName("X")), " has rank ",
                x.shape().rank());
  HandOffOrWait(ctx, comm->SendTensorAsync(x, ctx.device_context().ReadyFence(),
                                           ctx.Attr<int32_t>("micro_batch")));
}

void RecvKernel(const ExecutionContext& ctx) {
  int peer = 0;
  Communicator* comm = PairOf(ctx, &peer);
  const auto start = std::chrono::steady_clock::now();
  const auto want = static_cast<DataType>(ctx.Attr<int32_t>("dtype"));
  const Shape declared(ctx.Attr<std::vector<int64_t>>("out_shape"));
  // Runs on the ring's worker, once the header has arrived.
  auto accept = [name = ctx.OutputName("Out"), want, declared](
                    DataType dtype, const Shape& shape) {
    FLUID_ENFORCE(dtype == want, "recv_v2: ", Quote(name), " arrives as ",
                  DataTypeName(dtype), ", declared ", DataTypeName(want));
    FLUID_ENFORCE(declared.rank() == 0 || ShapeMatches(declared, shape),
                  "recv_v2: ", Quote(name), " arrives as ", shape,
                  ", declared ", declared);
  };
  Communicator::FenceFn fence;
  if (!ctx.place().is_cpu())
    fence = [dc = &ctx.device_context()] { return dc->ReadyFence(); };
  CommHandlePtr handle =
      comm->RecvTensorAsync(peer, want, ctx.place(), std::move(accept),
                            std::move(fence), ctx.Attr<int32_t>("micro_batch"));
  if (ctx.HasOutput("Handle")) {
    *ctx.OutputVar("Handle")->GetMutable<CommHandlePtr>() = std::move(handle);
    return;  // its c_wait puts the tensor in Out
  }
  handle->Wait();
  *ctx.Output("Out") = std::move(*handle->received());
  comm->AddExposedWait(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count());
}

void RecvInferShape(InferShapeContext* ctx) {
  ctx->SetOutputShape("Out",
                      Shape(ctx->Attr<std::vector<int64_t>>("out_shape")));
  ctx->SetOutputDtype("Out",
                      static_cast<DataType>(ctx->Attr<int32_t>("dtype")));
}

}  // namespace

REGISTER_OP(send_v2)
    .Doc("Sends X to the other rank of a two-rank ring (recv_v2 there).")
    .Input("X")
    .OptionalOutput("Handle", "the send in flight, for c_wait")
    .Attr<int32_t>("ring_id", 0, RingIdDoc())
    .InRange(0, kNoUpperBound)
    .Attr<int32_t>("peer", 1, "the receiving rank in the ring (0 or 1)")
    .InRange(0, 1)
    .Attr<int32_t>("micro_batch", -1, "the pipeline micro-batch it carries")
    .AnyPlaceKernel(SendKernel);

REGISTER_OP(recv_v2)
    .Doc("Receives Out from the other rank of a two-rank ring (its send_v2).")
    .Output("Out")
    .Attr<int32_t>("ring_id", 0, RingIdDoc())
    .InRange(0, kNoUpperBound)
    .OptionalOutput("Handle",
                    "the receive in flight; its c_wait (with Out) puts the "
                    "tensor in Out")
    .Attr<int32_t>("peer", 0, "the sending rank in the ring (0 or 1)")
    .InRange(0, 1)
    .Attr<int32_t>("micro_batch", -1, "the pipeline micro-batch it carries")
    .Attr<int32_t>("dtype", static_cast<int32_t>(DataType::kFloat32),
                   "the element type that must arrive")
    .Attr<std::vector<int64_t>>("out_shape", {},
                                "the declared shape (-1: any); empty: any")
    .SetInferShape(RecvInferShape)
    .AnyPlaceKernel(RecvKernel);

}  // namespace ops
}  // namespace fluid
