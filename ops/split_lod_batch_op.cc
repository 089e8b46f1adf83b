// split_lod_batch (X -> Out[num]; attr num): a batch of sequences cut into
// num equal groups of whole sequences, in order, as a pipeline cuts a batch
// into micro-batches: Out[k] holds sequences [k * n / num, (k + 1) * n /
// num) of X's LoD (one level), their rows and their offsets from 0. n must
// be a multiple of num (an error naming both otherwise).
// split_lod_batch_grad (X, Out@GRAD[num] -> X@GRAD): the parts' rows back in
// X's order, with X's LoD.
// One kernel serves every place: the rows of a group are contiguous, so each
// part is one copy of a slice of X (and the gradient one copy per part).
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

// The sequence offsets at which the groups start, and X's checked LoD.
std::vector<int64_t> GroupStarts(const ExecutionContext& ctx, const Tensor& x,
                                 int64_t num) {
  FLUID_ENFORCE(x.has_lod() && x.lod_levels() == 1, ctx.type(), ": X '",
                ctx.InputName("X"),
                "' must be a batch of sequences of one LoD ", "level, has ",
                x.lod_levels());
  FLUID_ENFORCE(x.shape().rank() >= 1, ctx.type(), ": X '", ctx.InputName("X"),
                "' has no row dim");
  CheckLoD(x.lod(), x.shape()[0],
           ctx.type() + ": X '" + ctx.InputName("X") + "'");
  const int64_t n = LoDCount(x.lod());
  FLUID_ENFORCE(n % num == 0, ctx.type(), ": X '", ctx.InputName("X"),
                "' holds ", n, " sequences, which do not cut into ", num,
                " equal groups (micro-batches): give a multiple of ", num);
  std::vector<int64_t> starts;
  for (int64_t k = 0; k <= num; ++k) starts.push_back(k * (n / num));
  return starts;
}

void SplitLoDBatchInferShape(InferShapeContext* ctx) {
  const int32_t num = ctx->Attr<int32_t>("num");
  FLUID_ENFORCE(static_cast<int64_t>(ctx->OutputSize("Out")) == num,
                ctx->op_type(), ": attr num is ", num, " but Out has ",
                ctx->OutputSize("Out"), " vars");
  if (ctx->IsRuntime()) return;  // the kernel sizes the parts
  Shape s = ctx->GetInputShape("X");
  FLUID_ENFORCE(s.rank() >= 1, ctx->op_type(), ": X '", ctx->InputName("X"),
                "' has no row dim");
  s[0] = -1;
  for (int32_t k = 0; k < num; ++k) {
    ctx->SetOutputShape("Out", s, k);
    ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"), k);
    ctx->SetOutputLoDLevel("Out", 1, k);
  }
}

void SplitLoDBatchKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const int64_t num = ctx.Attr<int32_t>("num");
  const std::vector<int64_t> starts = GroupStarts(ctx, x, num);
  const LoD& lod = x.lod();
  for (int64_t k = 0; k < num; ++k) {
    const int64_t lo = lod[starts[k]], hi = lod[starts[k + 1]];
    LoD part_lod;
    for (int64_t s = starts[k]; s <= starts[k + 1]; ++s)
      part_lod.push_back(lod[s] - lo);
    Tensor* out = ctx.Output("Out", k);
    out->CopyFrom(x.Slice(lo, hi), ctx.place());
    out->set_lod(std::move(part_lod));
  }
}

void SplitLoDBatchGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const Tensor& x = ctx.Input("X");
  const int64_t num = ctx.Attr<int32_t>("num");
  const std::vector<int64_t> starts = GroupStarts(ctx, x, num);
  const LoD& lod = x.lod();
  Tensor dx(x.dtype(), x.shape());
  char* dst = static_cast<char*>(dx.raw_mutable_data());
  const int64_t rows = x.shape()[0];
  const size_t row_bytes = rows > 0 ? dx.bytes() / rows : 0;
  for (int64_t k = 0; k < num; ++k) {
    const int64_t lo = lod[starts[k]], hi = lod[starts[k + 1]];
    Tensor part;
    part.CopyFrom(ctx.Input(GradSlot("Out"), k), Place::CPU());
    FLUID_ENFORCE(
        part.shape().rank() >= 1 && part.shape()[0] == hi - lo &&
            part.dtype() == x.dtype() && part.bytes() == (hi - lo) * row_bytes,
        ctx.type(), ": Out@GRAD ", k, " '", ctx.InputName(GradSlot("Out"), k),
        "' is ", DataTypeName(part.dtype()), " ", part.shape(), " but part ", k,
        " has ", hi - lo, " rows of X's");
    if (part.bytes() > 0)
      std::memcpy(dst + lo * row_bytes, part.raw_data(), part.bytes());
  }
  Tensor* out = ctx.Output(GradSlot("X"));
  out->CopyFrom(dx, ctx.place());
  out->set_lod(lod);
}

}  // namespace

REGISTER_OP(split_lod_batch)
    .Doc("X's sequences in num equal groups of whole sequences, in order.")
    .Input("X", "a batch of sequences (one LoD level)")
    .DuplicableOutput("Out", "num parts: their sequences' rows and LoD")
    .Attr<int32_t>("num", 1, "how many groups (X's sequences: a multiple)")
    .InRange(1, std::numeric_limits<int32_t>::max())
    .SetInferShape(SplitLoDBatchInferShape)
    .SetGradMaker([](const proto::OpDesc& op) -> std::vector<proto::OpDesc> {
      std::vector<std::string> douts;
      for (const std::string& o : OpOutput(op, "Out"))
        douts.push_back(GradVarName(o));
      return {MakeOp("split_lod_batch_grad",
                     {{"X", OpInput(op, "X")}, {"Out@GRAD", douts}},
                     {{"X@GRAD", {GradVarName(OpInput(op, "X")[0])}}},
                     {{"num", GetOpAttrAs<int32_t>(op, "num")}})};
    })
    .AnyPlaceKernel(SplitLoDBatchKernel);

REGISTER_OP(split_lod_batch_grad)
    .Doc("X@GRAD: the parts' gradients back in X's order, with X's LoD.")
    .Input("X", "the forward op's X")
    .DuplicableInput("Out@GRAD", "the parts' gradients")
    .Output("X@GRAD", "X's gradient")
    .Attr<int32_t>("num", 1, "how many parts")
    .InRange(1, std::numeric_limits<int32_t>::max())
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->ShareShape("X", GradSlot("X"));
    })
    .AnyPlaceKernel(SplitLoDBatchGradKernel);

}  // namespace ops
}  // namespace fluid
