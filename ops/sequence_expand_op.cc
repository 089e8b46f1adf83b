// sequence_expand: X's sequences (or rows, for X without a LoD) repeated
// as many times as the matching sequence of Y is long, as Fluid's op does.
// The sequences of Y are those of its LoD level ref_level (-1: the last,
// the rows' offsets; for a Y of several levels, 0 counts the sequences of
// the level below, as Fluid reads the level's offsets as they are). Out's
// LoD: one sequence per repetition when X has a LoD, that level of Y when X
// has none (row i of X spread over Y's sequence i).
#include "ops/sequence_expand_op.h"

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

void CheckRefLevel(InferShapeContext* ctx) {
  const int level = ctx->Attr<int32_t>("ref_level");
  const int y_levels = ctx->InputLoDLevel("Y");
  FLUID_ENFORCE(
      level >= -1 && (y_levels <= 0 || level < y_levels),
      "sequence_expand: attr 'ref_level' is ", level, " but Y ",
      Quote(ctx->InputName("Y")), " has ", y_levels,
      " LoD level(s); it must be -1 (the last) or a level of Y's LoD");
}

}  // namespace

const LoD& ExpandRefLoD(const ExecutionContext& ctx) {
  const Tensor& y = ctx.Input("Y");
  const int n = y.lod_levels();
  const int ref = ctx.Attr<int32_t>("ref_level");
  FLUID_ENFORCE(ref >= -1 && ref < n, "sequence_expand: attr 'ref_level' is ",
                ref, " but Y ", Quote(ctx.InputName("Y")), " has ", n,
                " LoD level(s); it must be -1 (the last) or in [0, ", n - 1,
                "]");
  // A reference into Y: the kernels run every step.
  return ref == -1 || ref == n - 1 ? y.lod() : y.outer_lod()[ref];
}

// Out's LoD at run time (X with a LoD: one sequence per repetition).
LoD ExpandedLoD(const LoD& x_lod, const LoD& y_lod) {
  if (x_lod.empty()) return y_lod;
  LoD out{0};
  for (size_t i = 0; i + 1 < y_lod.size(); ++i)
    for (int64_t k = y_lod[i]; k < y_lod[i + 1]; ++k)
      out.push_back(out.back() + x_lod[i + 1] - x_lod[i]);
  return out;
}

namespace {

void SequenceExpandInferShape(InferShapeContext* ctx) {
  CheckRefLevel(ctx);
  // The last level (SequenceInputLoD checks it), or the one ref_level picks.
  LoD y_lod = SequenceInputLoD(ctx, "Y");
  const int ref = ctx->Attr<int32_t>("ref_level");
  if (ctx->IsRuntime() && ref >= 0 && ref < ctx->InputLoDLevel("Y") - 1)
    y_lod = ctx->InputAllLoD("Y")[ref];
  Shape out = ctx->GetInputShape("X");
  FLUID_ENFORCE(out.rank() >= 1, "sequence_expand: X ",
                Quote(ctx->InputName("X")), " must have a row dim");
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  ctx->SetOutputLoDLevel("Out", 1);
  if (!ctx->IsRuntime()) {
    out[0] = -1;
    ctx->SetOutputShape("Out", out);
    return;
  }
  const LoD x_lod = ctx->InputLoD("X");
  const int64_t have = x_lod.empty() ? out[0] : LoDCount(x_lod);
  FLUID_ENFORCE(have == LoDCount(y_lod), "sequence_expand: X ",
                Quote(ctx->InputName("X")), " holds ", have,
                x_lod.empty() ? " rows" : " sequences", " but Y ",
                Quote(ctx->InputName("Y")), " holds ", LoDCount(y_lod),
                " sequences; each ", x_lod.empty() ? "row" : "sequence",
                " of X is repeated once per row of Y's matching sequence");
  const LoD out_lod = ExpandedLoD(x_lod, y_lod);
  out[0] = out_lod.back();
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputLoD("Out", out_lod);
}

template <typename T>
void SequenceExpandKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  const LoD& y_lod = ExpandRefLoD(ctx);
  const ExpandMap m{x.has_lod(), x.lod().data(), y_lod.data(),
                    out->lod().data(), LoDCount(y_lod)};
  const int64_t width = RowWidth(x.shape());
  const T* xp = x.data<T>();
  T* op = out->mutable_data<T>();
  ParallelFor(ctx.device(), out->shape()[0], static_cast<double>(width),
              [&](int64_t b, int64_t e) {
                for (int64_t o = b; o < e; ++o) {
                  const T* src = xp + m.SourceRow(o) * width;
                  std::copy(src, src + width, op + o * width);
                }
              });
}

void SequenceExpandGradInferShape(InferShapeContext* ctx) {
  SequenceInputLoD(ctx, "Y");
  ctx->ShareShape("X", GradSlot("X"));
}

template <typename T>
void SequenceExpandGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const LoD& y_lod = ExpandRefLoD(ctx);
  const LoD out_lod = ExpandedLoD(x.lod(), y_lod);
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const int64_t width = RowWidth(x.shape());
  FLUID_ENFORCE(dout.numel() == out_lod.back() * width, "Out@GRAD has shape ",
                dout.shape(), " but Out has ", out_lod.back(), " rows of ",
                width);
  const ExpandMap m{x.has_lod(), x.lod().data(), y_lod.data(), out_lod.data(),
                    LoDCount(y_lod)};
  const T* g = dout.data<T>();
  T* dp = dx->mutable_data<T>();
  ParallelFor(ctx.device(), x.shape()[0], static_cast<double>(width) * 4,
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r)
                  for (int64_t c = 0; c < width; ++c)
                    dp[r * width + c] = m.GradOf(g, width, r, c);
              });
}

}  // namespace

REGISTER_OP(sequence_expand)
    .Doc("Repeats X's sequences (or rows) as Y's sequences are long.")
    .Input("X", "[rows, ...], with or without level-1 LoD")
    .Input("Y", "a batch of sequences (only its LoD is read)")
    .Output("Out", "[expanded rows, ...] with level-1 LoD")
    .Attr<int32_t>("ref_level", -1, "Y's LoD level to expand by (-1: last)")
    .SetInferShape(SequenceExpandInferShape)
    .SetGrad(GradSpec("sequence_expand_grad")
                 .Inputs({"X", "Y"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(SequenceExpandKernel<float>)
    .CPUKernel<double>(SequenceExpandKernel<double>);

REGISTER_GRAD_OP(sequence_expand_grad)
    .Doc("dX[r] = the sum of dOut over the copies of row r.")
    .SetInferShape(SequenceExpandGradInferShape)
    .CPUKernel<float>(SequenceExpandGradKernel<float>)
    .CPUKernel<double>(SequenceExpandGradKernel<double>);

}  // namespace ops
}  // namespace fluid
