// edit_distance: the Levenshtein distance between each hypothesis and its
// reference, as Fluid's op computes it. Hyps and Refs are int64 token
// sequences: [rows, 1] with level-1 LoD, or padded [N, S] with HypsLength
// and RefsLength. Out is float32 [N, 1] (divided by the reference's length
// when `normalized`), SequenceNum int64 [1] the number of pairs. Not
// differentiable.
#include "ops/edit_distance_op.h"

#include "ops/linear_chain_crf_op.h"
#include "ops/op_helpers.h"
#include "ops/sequence_helpers.h"

namespace fluid {
namespace ops {

namespace {

std::vector<int64_t> Spans(const Tensor& x, const Tensor* length,
                           const std::string& slot) {
  if (length == nullptr) return SpansFromLoD(x.lod());
  FLUID_ENFORCE(length->numel() == x.shape()[0], "edit_distance: ", slot,
                "Length holds ", length->numel(), " lengths for the ",
                x.shape()[0], " padded sequences of ", slot, " ", x.shape());
  const int64_t* lp = length->data<int64_t>();
  return SpansFromLengths(std::vector<int64_t>(lp, lp + length->numel()),
                          x.shape()[1], "edit_distance: " + slot + "Length");
}

}  // namespace

EditDistanceSpans EditDistanceInputs(const Tensor& hyps, const Tensor& refs,
                                     const Tensor* hyps_length,
                                     const Tensor* refs_length,
                                     bool normalized) {
  EditDistanceSpans s{Spans(hyps, hyps_length, "Hyps"),
                      Spans(refs, refs_length, "Refs")};
  FLUID_ENFORCE(s.hyps.size() == s.refs.size(), "edit_distance: Hyps holds ",
                s.hyps.size() / 2, " sequences but Refs ", s.refs.size() / 2,
                "; each hypothesis needs its reference");
  for (size_t i = 0; normalized && i < s.refs.size() / 2; ++i)
    FLUID_ENFORCE(s.refs[2 * i + 1] > 0, "edit_distance: reference ", i,
                  " is empty; with normalized=True the distance is divided "
                  "by the reference's length, so none may be empty");
  return s;
}

namespace {

void CheckTokens(InferShapeContext* ctx, const std::string& slot, bool padded) {
  const DataType dt = ctx->GetInputDtype(slot);
  FLUID_ENFORCE(dt == DataType::kInt64, "edit_distance: ", slot, " ",
                Quote(ctx->InputName(slot)), " must be int64, is ",
                DataTypeName(dt));
  const Shape s = ctx->GetInputShape(slot);
  if (padded) {
    FLUID_ENFORCE(s.rank() == 2, "edit_distance: ", slot, " ",
                  Quote(ctx->InputName(slot)), " has shape ", s,
                  "; with lengths it must be padded [N, S]");
    const std::string len = slot + "Length";
    FLUID_ENFORCE(ctx->GetInputDtype(len) == DataType::kInt64,
                  "edit_distance: ", len, " ", Quote(ctx->InputName(len)),
                  " must be int64, is ", DataTypeName(ctx->GetInputDtype(len)));
    return;
  }
  FLUID_ENFORCE(s.rank() == 2 && (s[1] == 1 || s[1] < 0),
                "edit_distance: ", slot, " ", Quote(ctx->InputName(slot)),
                " has shape ", s,
                "; it must be [rows, 1] with level-1 LoD (or padded [N, S] "
                "with HypsLength and RefsLength)");
  SequenceInputLoD(ctx, slot);
}

void EditDistanceInferShape(InferShapeContext* ctx) {
  const bool padded = ctx->HasInput("HypsLength");
  FLUID_ENFORCE(padded == ctx->HasInput("RefsLength"),
                "edit_distance: HypsLength and RefsLength go together (padded "
                "Hyps and Refs); only ",
                padded ? "HypsLength" : "RefsLength", " is given");
  CheckTokens(ctx, "Hyps", padded);
  CheckTokens(ctx, "Refs", padded);
  int64_t n = padded ? ctx->GetInputShape("Hyps")[0] : -1;
  if (!padded && ctx->IsRuntime()) n = LoDCount(ctx->InputLoD("Hyps"));
  ctx->SetOutputShape("Out", Shape({n, 1}));
  ctx->SetOutputDtype("Out", DataType::kFloat32);
  ctx->SetOutputLoDLevel("Out", 0);
  ctx->SetOutputShape("SequenceNum", Shape({1}));
  ctx->SetOutputDtype("SequenceNum", DataType::kInt64);
}

const Tensor* Optional(const ExecutionContext& ctx, const std::string& slot) {
  return ctx.HasInput(slot) ? &ctx.Input(slot) : nullptr;
}

void EditDistanceKernel(const ExecutionContext& ctx) {
  const Tensor& hyps = ctx.Input("Hyps");
  const Tensor& refs = ctx.Input("Refs");
  const bool normalized = ctx.Attr<bool>("normalized");
  const EditDistanceSpans s =
      EditDistanceInputs(hyps, refs, Optional(ctx, "HypsLength"),
                         Optional(ctx, "RefsLength"), normalized);
  const int64_t n = static_cast<int64_t>(s.hyps.size() / 2);
  Tensor* out = ctx.Output("Out");
  out->Resize(Shape({n, 1}));
  float* op = out->mutable_data<float>();
  ctx.Output("SequenceNum")->mutable_data<int64_t>(Shape({1}))[0] = n;
  const int64_t* a = hyps.data<int64_t>();
  const int64_t* b = refs.data<int64_t>();
  ParallelFor(ctx.device(), n, 64.0, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> row;
    for (int64_t i = lo; i < hi; ++i) {
      const int64_t len = s.refs[2 * i + 1];
      row.resize(static_cast<size_t>(len + 1));
      const int64_t dist = Levenshtein(a + s.hyps[2 * i], s.hyps[2 * i + 1],
                                       b + s.refs[2 * i], len, row.data());
      op[i] = normalized ? static_cast<float>(double(dist) / double(len))
                         : static_cast<float>(dist);
    }
  });
}

}  // namespace

REGISTER_OP(edit_distance)
    .Doc("Levenshtein distance between each hypothesis and its reference.")
    .Input("Hyps", "int64 [rows, 1] with level-1 LoD, or padded [N, S]")
    .Input("Refs", "int64 [rows, 1] with level-1 LoD, or padded [N, S]")
    .OptionalInput("HypsLength", "int64 [N]: padded mode's lengths of Hyps")
    .OptionalInput("RefsLength", "int64 [N]: padded mode's lengths of Refs")
    .Output("Out", "float32 [N, 1]: the distances")
    .Output("SequenceNum", "int64 [1]: N")
    .Attr<bool>("normalized", false,
                "divide each distance by its reference's length")
    .SetInferShape(EditDistanceInferShape)
    .CPUKernel<int64_t>(EditDistanceKernel);

}  // namespace ops
}  // namespace fluid
