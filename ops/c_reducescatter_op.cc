// c_reducescatter: Out = this rank's block of the reduction over all ranks
// of X (sum | avg | max). X holds `nranks` blocks along dim 0; Out is one
// block. With a Handle output the collective runs asynchronously on the
// communicator's thread and a later c_wait completes it; without one the op
// waits. Each block is reduced in one place, which is what makes the
// ranks' copies identical once they gather the blocks again (c_allgather).
#include "ops/collective_helpers.h"

namespace fluid {
namespace ops {
namespace {

// X's shape with dim 0 divided by nranks.
Shape BlockShape(const Shape& x, int nranks, const char* op) {
  FLUID_ENFORCE(nranks >= 1, op, ": nranks must be >= 1, got ", nranks);
  FLUID_ENFORCE(x.rank() >= 1, op, ": X must have at least one dim");
  Shape out = x;
  if (x[0] >= 0) {
    FLUID_ENFORCE(x[0] % nranks == 0, op, ": dim 0 of X (", x[0],
                  ") is not a multiple of nranks (", nranks, ")");
    out[0] = x[0] / nranks;
  }
  return out;
}

void CheckRanks(Communicator* comm, int nranks, const char* op) {
  FLUID_ENFORCE(comm->size() == nranks, op, " was planned for ", nranks,
                " ranks and runs on ", comm->size());
}

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
  CommHandlePtr handle =
      comm->ReduceScatterAsync(x, *out, op, ctx.device_context().ReadyFence());
  HandOffOrWait(ctx, std::move(handle));
}

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

// Out = a view of block rank() of X along dim 0 (no copy).
void ShardViewKernel(const ExecutionContext& ctx) {
  const int nranks = ctx.Attr<int32_t>("nranks");
  Communicator* comm = CommunicatorOf(ctx);
  CheckRanks(comm, nranks, "shard_view");
  const Tensor& x = ctx.Input("X");
  const int64_t block = x.shape()[0] / nranks;
  Tensor view = x.Slice(block * comm->rank(), block * (comm->rank() + 1));
  ctx.Output("Out")->ShareDataWith(view);
}

void BlockInferShape(InferShapeContext* ctx, const char* op) {
  Shape out =
      BlockShape(ctx->GetInputShape("X"), ctx->Attr<int32_t>("nranks"), op);
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
}

}  // namespace

REGISTER_OP(c_reducescatter)
    .Doc("Reduces X over all ranks; Out receives this rank's block.")
    .Input("X", "nranks blocks along dim 0")
    .Output("Out", "this rank's block of the reduction")
    .OptionalOutput("Handle", "the in-flight collective, for c_wait")
    .Attr<std::string>("reduce_type", "sum", "sum | avg | max")
    .Attr<int32_t>("nranks", 1, "the number of ranks (blocks of X)")
    .InRange(1, kNoUpperBound)
    .SetInferShape([](InferShapeContext* ctx) {
      BlockInferShape(ctx, "c_reducescatter");
    })
    .AnyPlaceKernel(ReduceScatterKernel);

REGISTER_OP(c_allgather)
    .Doc("Out = every rank's X, concatenated along dim 0 in rank order.")
    .Input("X", "this rank's block (may be a view of its block of Out)")
    .Output("Out", "nranks blocks along dim 0")
    .OptionalOutput("Handle", "the in-flight collective, for c_wait")
    .Attr<int32_t>("nranks", 1, "the number of ranks")
    .InRange(1, kNoUpperBound)
    .SetInferShape([](InferShapeContext* ctx) {
      Shape out = ctx->GetInputShape("X");
      FLUID_ENFORCE(out.rank() >= 1, "c_allgather: X must have a dim");
      if (out[0] >= 0) out[0] *= ctx->Attr<int32_t>("nranks");
      ctx->SetOutputShape("Out", out);
      ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
    })
    .AnyPlaceKernel(AllGatherKernel);

REGISTER_OP(shard_view)
    .Doc("Out = a view (no copy) of this rank's block of X along dim 0.")
    .Input("X", "nranks blocks along dim 0")
    .Output("Out", "block rank of X, sharing its memory")
    .Attr<int32_t>("nranks", 1, "the number of ranks (blocks of X)")
    .InRange(1, kNoUpperBound)
    .SetInferShape([](InferShapeContext* ctx) {
      BlockInferShape(ctx, "shard_view");
    })
    .AnyPlaceKernel(ShardViewKernel);

}  // namespace ops
}  // namespace fluid
