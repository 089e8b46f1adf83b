// c_split: Out = this rank's block of X along `axis`: X cut into `nranks`
// equal pieces, the rank taking the piece of its rank in ring `ring_id`
// (tensor parallelism: a replicated tensor sliced for this rank). No
// communication; the ring only tells the rank. Works in place (Out is X:
// a startup program slices a parameter after initialising it whole). Its
// gradient is c_concat: X@GRAD = every rank's Out@GRAD joined in rank order.
#include "ops/c_split_concat.h"
#include "ops/collective_helpers.h"
#include "src/framework/grad_op_maker.h"

namespace fluid {
namespace ops {

Shape SplitBlockShape(const Shape& whole, int axis, int nranks,
                      const std::string& op, const std::string& var) {
  FLUID_ENFORCE(nranks >= 1, op, ": nranks must be >= 1, got ", nranks);
  Shape block = whole;
  if (whole[axis] < 0) return block;
  FLUID_ENFORCE(whole[axis] % nranks == 0, op, ": dim ", axis, " of X '", var,
                "' (shape ", whole, ") is ", whole[axis],
                ", not a multiple of nranks (", nranks, ")");
  block[axis] = whole[axis] / nranks;
  return block;
}

Communicator* RingOfSize(const ExecutionContext& ctx, int nranks) {
  if (nranks == 1 && ctx.device_context().communicator() == nullptr)
    return nullptr;
  Communicator* ring = CommunicatorOf(ctx);
  CheckRanks(ring, nranks, ctx.type().c_str());
  return ring;
}

std::vector<proto::OpDesc> SplitConcatGrad(const std::string& type,
                                           const proto::OpDesc& fwd) {
  auto attr = [&fwd](const char* name, int32_t dflt) {
    return HasOpAttr(fwd, name) ? GetOpAttrAs<int32_t>(fwd, name) : dflt;
  };
  return {MakeOp(type, {{"X", {GradVarName(OpOutput(fwd, "Out").at(0))}}},
                 {{"Out", {GradVarName(OpInput(fwd, "X").at(0))}}},
                 {{"axis", attr("axis", -1)},
                  {"ring_id", attr("ring_id", 0)},
                  {"nranks", attr("nranks", 1)},
                  {kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward)}})};
}

void RunSplit(const ExecutionContext& ctx, PieceCopyFn copy) {
  if (!ctx.HasOutput("Out")) return;  // an unneeded gradient, on every rank
  const int nranks = ctx.Attr<int32_t>("nranks");
  Communicator* ring = RingOfSize(ctx, nranks);
  const Tensor& x = ctx.Input("X");
  const int axis = AxisAttr(ctx, x.shape(), ctx.InputName("X"));
  const Shape block =
      SplitBlockShape(x.shape(), axis, nranks, "c_split", ctx.InputName("X"));
  Tensor* out = ctx.Output("Out");
  Tensor in_place;  // Out is X: the block goes here first
  Tensor* dst = out == &x ? &in_place : out;
  dst->set_dtype(x.dtype());
  dst->Resize(block);
  void* to = dst->raw_mutable_data(ctx.place());
  const int rank = ring == nullptr ? 0 : ring->rank();
  copy(ctx, RankColumns(x.shape(), axis, block[axis], rank), x.raw_data(), to,
       false, SizeOf(x.dtype()));
  // Cut along a later dim, the block keeps X's rows (and sequences).
  LoD lod = axis == 0 ? LoD() : x.lod();
  dst->set_lod(std::move(lod));
  if (out == &x) *out = in_place;
}

namespace {

void SplitInferShape(InferShapeContext* ctx) {
  if (!ctx->HasOutput("Out")) return;  // an unneeded gradient
  // In place, Out's shape is X's until the kernel has read X whole: the
  // kernel sets it.
  if (ctx->InputName("X") == ctx->OutputName("Out")) return;
  const Shape x = ctx->GetInputShape("X");
  const int axis = NormalizeAxis(ctx->Attr<int32_t>("axis"), x.rank(),
                                 "c_split", ctx->InputName("X"));
  ctx->SetOutputShape(
      "Out", SplitBlockShape(x, axis, ctx->Attr<int32_t>("nranks"), "c_split",
                             ctx->InputName("X")));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  if (axis != 0) ctx->ShareLoD("X", "Out");
}

void SplitCpuKernel(const ExecutionContext& ctx) {
  RunSplit(ctx, CpuPieceCopy);
}

}  // namespace

REGISTER_OP(c_split)
    .Doc(
        "Out = this rank's block of X: X cut along axis into nranks equal "
        "pieces, the rank's in ring ring_id.")
    .Input("X", "the whole tensor, the same on every rank of the ring")
    .Output("Out", "this rank's block (may be X: sliced in place)")
    .Attr<int32_t>("axis", -1, "the dim to cut; negative counts from the end")
    .Attr<int32_t>("ring_id", 0, RingIdDoc())
    .InRange(0, kNoUpperBound)
    .Attr<int32_t>("nranks", 1, "the ranks of the ring (blocks of X)")
    .InRange(1, kNoUpperBound)
    .SetInferShape(SplitInferShape)
    .SetGradMaker([](const proto::OpDesc& fwd) {
      return SplitConcatGrad("c_concat", fwd);
    })
    .AnyDtypeKernel(SplitCpuKernel);

}  // namespace ops
}  // namespace fluid
