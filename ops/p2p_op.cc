// send_v2 / recv_v2: a tensor from one rank to another, the pipeline's
// activations and gradients (transpiler/pipeline.h). Both run on a ring of
// two ranks (one per cut and direction): a send is a broadcast from the
// sender, its dtype and shape first, so the receiver needs to know neither
// beforehand, and the ring's collective check, flight recorder and stall
// watchdog see every message (a mismatch is an error, a stuck peer is
// named). A batch of sequences' offsets (LoD) travel after the header. The
// send does not wait unless it has no Handle (c_wait it); the receive does.
#include <algorithm>
#include <chrono>

#include "ops/collective_helpers.h"

namespace fluid {
namespace ops {
namespace {

// dtype, rank, the dims, then the number of sequence offsets (LoD) that
// follow as a message of their own (0: none).
constexpr int kHeader = 3 + Shape::kMaxRank;
constexpr int kLoDSlot = 2 + Shape::kMaxRank;

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
  Tensor header;
  int64_t* h = header.mutable_data<int64_t>(Shape{kHeader});
  h[0] = static_cast<int64_t>(x.dtype());
  h[1] = x.shape().rank();
  for (int i = 0; i < x.shape().rank(); ++i) h[2 + i] = x.shape()[i];
  for (int i = x.shape().rank(); i < Shape::kMaxRank; ++i) h[2 + i] = 0;
  h[kLoDSlot] = static_cast<int64_t>(x.lod().size());
  const int32_t mb = ctx.Attr<int32_t>("micro_batch");
  comm->BroadcastAsync(header, comm->rank(), nullptr, mb);
  if (x.has_lod()) {  // a batch of sequences: its offsets travel too
    Tensor offsets;
    std::copy(x.lod().begin(), x.lod().end(),
              offsets.mutable_data<int64_t>(
                  Shape{static_cast<int64_t>(x.lod().size())}));
    comm->BroadcastAsync(offsets, comm->rank(), nullptr, mb);
  }
  HandOffOrWait(ctx,
                comm->BroadcastAsync(x, comm->rank(),
                                     ctx.device_context().ReadyFence(), mb));
}

void RecvKernel(const ExecutionContext& ctx) {
  int peer = 0;
  Communicator* comm = PairOf(ctx, &peer);
  const auto start = std::chrono::steady_clock::now();
  Tensor header;
  int64_t* h = header.mutable_data<int64_t>(Shape{kHeader});
  const int32_t mb = ctx.Attr<int32_t>("micro_batch");
  comm->BroadcastAsync(header, peer, nullptr, mb)->Wait();
  const auto dtype = static_cast<DataType>(h[0]);
  const auto want = static_cast<DataType>(ctx.Attr<int32_t>("dtype"));
  FLUID_ENFORCE(dtype == want, "recv_v2: ", Quote(ctx.OutputName("Out")),
                " arrives as ", DataTypeName(dtype), ", declared ",
                DataTypeName(want));
  FLUID_ENFORCE(h[1] >= 0 && h[1] <= Shape::kMaxRank,
                "recv_v2: a header of "
                "rank ",
                h[1], " arrived for ", Quote(ctx.OutputName("Out")));
  FLUID_ENFORCE(h[kLoDSlot] >= 0 && h[kLoDSlot] < (int64_t{1} << 31),
                "recv_v2: a header of ", h[kLoDSlot],
                " sequence offsets "
                "arrived for ",
                Quote(ctx.OutputName("Out")));
  Tensor offsets;
  if (h[kLoDSlot] > 0) {
    offsets.mutable_data<int64_t>(Shape{h[kLoDSlot]});
    comm->BroadcastAsync(offsets, peer, nullptr, mb)->Wait();
  }
  std::vector<int64_t> dims(h + 2, h + 2 + h[1]);
  const Shape shape(dims);
  const Shape declared(ctx.Attr<std::vector<int64_t>>("out_shape"));
  FLUID_ENFORCE(declared.rank() == 0 || ShapeMatches(declared, shape),
                "recv_v2: ", Quote(ctx.OutputName("Out")), " arrives as ",
                shape, ", declared ", declared);
  Tensor* out = ctx.Output("Out");
  out->set_dtype(dtype);
  out->Resize(shape);
  out->raw_mutable_data(ctx.place());
  if (offsets.initialized()) {
    const int64_t* o = offsets.data<int64_t>();
    out->set_lod(LoD(o, o + offsets.numel()));
  } else {
    out->clear_lod();
  }
  comm->BroadcastAsync(*out, peer, ctx.device_context().ReadyFence(), mb)
      ->Wait();
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
