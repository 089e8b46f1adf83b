// concat: Out = the inputs X joined along `axis`; they agree on every other
// dim. Its gradient cuts Out@GRAD back into pieces shaped like the inputs
// (what split does forward); split's gradient is a concat.
#include <string>
#include <vector>

#include "ops/concat_split.h"
#include "src/framework/grad_op_maker.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace ops {
namespace {

// Out's dim on the axis is the sum of the inputs' (unknown if any is); every
// other dim must agree, an unknown one learning from the others.
void ConcatInferShape(InferShapeContext* ctx) {
  if (!ctx->HasOutput("Out")) return;  // an unneeded gradient
  const size_t n = ctx->InputSize("X");
  FLUID_ENFORCE(n >= 1, "concat: needs at least one input X");
  const Shape first = ctx->GetInputShape("X", 0);
  const DataType dtype = ctx->GetInputDtype("X", 0);
  const int axis = NormalizeAxis(ctx->Attr<int32_t>("axis"), first.rank(),
                                 "concat", ctx->InputName("X", 0));
  Shape out = first;
  for (size_t i = 1; i < n; ++i) {
    const Shape s = ctx->GetInputShape("X", i);
    bool ok = s.rank() == out.rank();
    for (int d = 0; ok && d < s.rank(); ++d) {
      if (d == axis) {
        out[d] = out[d] < 0 || s[d] < 0 ? -1 : out[d] + s[d];
      } else {
        ok = s[d] < 0 || out[d] < 0 || s[d] == out[d];
        if (ok && out[d] < 0) out[d] = s[d];
      }
    }
    FLUID_ENFORCE(ok, "concat: input X[", i, "] '", ctx->InputName("X", i),
                  "' has shape ", s, " but X[0] '", ctx->InputName("X", 0),
                  "' has shape ", first, "; they may differ only on axis ",
                  axis);
    FLUID_ENFORCE(ctx->GetInputDtype("X", i) == dtype, "concat: input X[", i,
                  "] '", ctx->InputName("X", i), "' is ",
                  ctx->GetInputDtype("X", i), " but X[0] '",
                  ctx->InputName("X", 0), "' is ", dtype);
  }
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out", dtype);
  // Joined along a later dim, Out's rows are X[0]'s: a batch of sequences
  // stays one (as Fluid's concat keeps X[0]'s LoD then).
  if (axis != 0) ctx->ShareLoD("X", "Out");
}

template <typename T>
void ConcatKernel(const ExecutionContext& ctx) {
  Tensor* out = ctx.Output("Out");
  if (out == nullptr) return;
  T* o = out->mutable_data<T>();
  ForEachPiece(
      out->shape(), AxisAttr(ctx, out->shape(), ctx.OutputName("Out")),
      ctx.InputSize("X"), [&](size_t i) { return ctx.Input("X", i).shape(); },
      [&](size_t i, const PieceColumns& c) {
        CopyPieceColumns(c, ctx.Input("X", i).data<T>(), o, true);
      });
}

void ConcatGradInferShape(InferShapeContext* ctx) {
  const std::string dout = GradSlot("Out");
  const Shape whole = ctx->GetInputShape(dout);
  const int axis = NormalizeAxis(ctx->Attr<int32_t>("axis"), whole.rank(),
                                 "concat_grad", ctx->InputName(dout));
  int64_t sum = 0;
  for (size_t i = 0; i < ctx->InputSize("X"); ++i) {
    const Shape s = ctx->GetInputShape("X", i);
    sum = sum < 0 || s[axis] < 0 ? -1 : sum + s[axis];
    // Per piece: ShareShape would skip them all when X@GRAD[0] is unneeded.
    if (ctx->OutputName(GradSlot("X"), i) == kEmptyVarName) continue;
    ctx->SetOutputShape(GradSlot("X"), s, i);
    ctx->SetOutputDtype(GradSlot("X"), ctx->GetInputDtype("X", i), i);
  }
  FLUID_ENFORCE(sum < 0 || whole[axis] < 0 || sum == whole[axis],
                "concat_grad: Out@GRAD '", ctx->InputName(dout), "' has shape ",
                whole, " but the inputs X add up to ", sum, " on axis ", axis);
}

template <typename T>
void ConcatGradKernel(const ExecutionContext& ctx) {
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const std::string dx = GradSlot("X");
  ForEachPiece(
      dout.shape(), AxisAttr(ctx, dout.shape(), ctx.InputName(GradSlot("Out"))),
      ctx.InputSize("X"), [&](size_t i) { return ctx.Input("X", i).shape(); },
      [&](size_t i, const PieceColumns& c) {
        if (!ctx.HasOutput(dx, i)) return;
        CopyPieceColumns(c, dout.data<T>(),
                         ctx.Output(dx, i)->mutable_data<T>(), false);
      });
}

}  // namespace

REGISTER_OP(concat)
    .Doc("Out = the inputs X joined along axis.")
    .DuplicableInput("X",
                     "one or more tensors of one rank and dtype that "
                     "agree on every dim but the axis")
    .Output("Out", "their concatenation")
    .Attr<int32_t>("axis", 0,
                   "the dim to join along; negative counts from "
                   "the end")
    .SetInferShape(ConcatInferShape)
    .SetGrad(
        GradSpec("concat_grad").Inputs({"X"}).OutGrads({"Out"}).InGrads({"X"}))
    .CPUKernel<float>(ConcatKernel<float>)
    .CPUKernel<double>(ConcatKernel<double>)
    .CPUKernel<bfloat16>(ConcatKernel<bfloat16>)
    .CPUKernel<float16>(ConcatKernel<float16>);

REGISTER_GRAD_OP(concat_grad)
    .Doc("X@GRAD[i] = the piece of Out@GRAD that X[i] filled.")
    .SetInferShape(ConcatGradInferShape)
    .CPUKernel<float>(ConcatGradKernel<float>)
    .CPUKernel<double>(ConcatGradKernel<double>)
    .CPUKernel<bfloat16>(ConcatGradKernel<bfloat16>)
    .CPUKernel<float16>(ConcatGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
