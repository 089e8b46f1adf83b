// c_concat: Out = the blocks X of every rank of ring `ring_id` joined along
// `axis` in rank order (tensor parallelism: a tensor computed in slices put
// back together on every rank). An all-gather of the blocks, then, along a
// later axis than 0, their re-layout into the columns they own. Its
// gradient is c_split: X@GRAD = this rank's block of Out@GRAD.
#include "ops/c_split_concat.h"
#include "ops/collective_helpers.h"

namespace fluid {
namespace ops {

void RunConcat(const ExecutionContext& ctx, PieceCopyFn copy) {
  if (!ctx.HasOutput("Out")) return;  // an unneeded gradient, on every rank
  const int nranks = ctx.Attr<int32_t>("nranks");
  Communicator* ring = RingOfSize(ctx, nranks);
  const Tensor& x = ctx.Input("X");
  const int axis = AxisAttr(ctx, x.shape(), ctx.InputName("X"));
  Shape whole = x.shape();
  whole[axis] *= nranks;
  Tensor* out = ctx.Output("Out");
  Tensor in_place;  // Out is X: the whole goes here first
  Tensor* dst = out == &x ? &in_place : out;
  dst->set_dtype(x.dtype());
  dst->Resize(whole);
  dst->raw_mutable_data(ctx.place());
  // Along dim 0 the gathered blocks lie where they belong; along another
  // dim they are gathered back to back, then moved into their columns.
  Tensor blocks = x;  // one rank: its own block
  if (ring != nullptr && axis == 0) {
    ring->AllGatherAsync(x, *dst, ctx.device_context().ReadyFence())->Wait();
  } else if (ring != nullptr) {
    Shape gathered = x.shape();
    gathered[0] *= nranks;
    blocks = Tensor(x.dtype(), gathered);
    blocks.raw_mutable_data(ctx.place());
    ring->AllGatherAsync(x, blocks, ctx.device_context().ReadyFence())->Wait();
  }
  if (ring == nullptr || axis != 0) {
    const auto* from = static_cast<const char*>(blocks.raw_data());
    void* to = const_cast<void*>(dst->raw_data());
    for (int r = 0; r < nranks; ++r)
      copy(ctx, RankColumns(whole, axis, x.shape()[axis], r),
           from + r * x.bytes(), to, true, SizeOf(x.dtype()));
  }
  LoD lod = axis == 0 ? LoD() : x.lod();
  dst->set_lod(std::move(lod));
  if (out == &x) *out = in_place;
}

namespace {

void ConcatInferShape(InferShapeContext* ctx) {
  if (!ctx->HasOutput("Out")) return;  // an unneeded gradient
  // In place, Out's shape is X's until the kernel has read X whole: the
  // kernel sets it.
  if (ctx->InputName("X") == ctx->OutputName("Out")) return;
  Shape out = ctx->GetInputShape("X");
  const int axis = NormalizeAxis(ctx->Attr<int32_t>("axis"), out.rank(),
                                 "c_concat", ctx->InputName("X"));
  if (out[axis] >= 0) out[axis] *= ctx->Attr<int32_t>("nranks");
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  if (axis != 0) ctx->ShareLoD("X", "Out");
}

void ConcatCpuKernel(const ExecutionContext& ctx) {
  RunConcat(ctx, CpuPieceCopy);
}

}  // namespace

REGISTER_OP(c_concat)
    .Doc(
        "Out = the blocks X of every rank of ring ring_id, joined along "
        "axis in rank order.")
    .Input("X", "this rank's block")
    .Output("Out", "the whole tensor, the same on every rank of the ring")
    .Attr<int32_t>("axis", -1,
                   "the dim to join along; negative counts from "
                   "the end")
    .Attr<int32_t>("ring_id", 0, RingIdDoc())
    .InRange(0, kNoUpperBound)
    .Attr<int32_t>("nranks", 1, "the ranks of the ring (blocks of Out)")
    .InRange(1, kNoUpperBound)
    .SetInferShape(ConcatInferShape)
    .SetGradMaker([](const proto::OpDesc& fwd) {
      return SplitConcatGrad("c_split", fwd);
    })
    .AnyDtypeKernel(ConcatCpuKernel);

}  // namespace ops
}  // namespace fluid
