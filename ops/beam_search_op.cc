// beam_search: one step of Fluid's beam search. For each source sentence (a
// group of PreIds' rows, its live prefixes) it keeps the beam_size best
// (prefix, candidate) pairs of ids/scores; an ended prefix (its id end_id)
// competes once more with its own score, and a source whose kept pairs all
// come from ended prefixes has finished and keeps none. The selection and
// the LoD each output carries: beam_search_op.h. Not differentiable.
#include "ops/beam_search_op.h"

#include <limits>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

bool IsFloat(DataType d) {
  return d == DataType::kFloat32 || d == DataType::kFloat64;
}

// A [rows, 1] (or [rows]) input of `dtype`; returns its rows (-1 unknown).
int64_t ColumnRows(InferShapeContext* ctx, const std::string& slot) {
  const Shape s = ctx->GetInputShape(slot);
  FLUID_ENFORCE(s.rank() == 1 || (s.rank() == 2 && (s[1] == 1 || s[1] < 0)),
                "beam_search: ", slot, " ", Quote(ctx->InputName(slot)),
                " has shape ", s, "; it must be [rows, 1], one per prefix");
  return s[0];
}

void CheckRows(const std::string& slot, const std::string& name, int64_t rows,
               int64_t want) {
  FLUID_ENFORCE(rows < 0 || want < 0 || rows == want, "beam_search: ", slot,
                " ", Quote(name), " has ", rows, " rows but pre_ids has ", want,
                " (one row per prefix)");
}

void CheckInputs(InferShapeContext* ctx) {
  const DataType ids_t = ctx->GetInputDtype("pre_ids");
  FLUID_ENFORCE(ids_t == DataType::kInt64, "beam_search: pre_ids ",
                Quote(ctx->InputName("pre_ids")), " is ", DataTypeName(ids_t),
                "; it must be int64");
  const DataType st = ctx->GetInputDtype("scores");
  const DataType pst = ctx->GetInputDtype("pre_scores");
  FLUID_ENFORCE(IsFloat(st), "beam_search: scores ",
                Quote(ctx->InputName("scores")), " is ", DataTypeName(st),
                "; it must be float32 or float64");
  FLUID_ENFORCE(pst == st, "beam_search: pre_scores ",
                Quote(ctx->InputName("pre_scores")), " is ", DataTypeName(pst),
                " but scores is ", DataTypeName(st), "; they must match");
  const int64_t rows = ColumnRows(ctx, "pre_ids");
  CheckRows("pre_scores", ctx->InputName("pre_scores"),
            ColumnRows(ctx, "pre_scores"), rows);
  const Shape s = ctx->GetInputShape("scores");
  FLUID_ENFORCE(s.rank() == 2, "beam_search: scores ",
                Quote(ctx->InputName("scores")), " has shape ", s,
                "; it must be [rows, K], K candidates per prefix");
  CheckRows("scores", ctx->InputName("scores"), s[0], rows);
  if (!ctx->HasInput("ids")) return;
  const DataType it = ctx->GetInputDtype("ids");
  FLUID_ENFORCE(it == DataType::kInt64, "beam_search: ids ",
                Quote(ctx->InputName("ids")), " is ", DataTypeName(it),
                "; it must be int64");
  const Shape i = ctx->GetInputShape("ids");
  FLUID_ENFORCE(i.rank() == 2 && (i[1] < 0 || s[1] < 0 || i[1] == s[1]),
                "beam_search: ids ", Quote(ctx->InputName("ids")),
                " has shape ", i, " but scores has ", s,
                "; they must both be [rows, K]");
  CheckRows("ids", ctx->InputName("ids"), i[0], rows);
}

void BeamSearchInferShape(InferShapeContext* ctx) {
  const int level = ctx->Attr<int32_t>("level");
  FLUID_ENFORCE(level == 0 || level == 1, "beam_search: attr 'level' is ",
                level,
                "; it must be 0 (a beam per source sentence, the sources of "
                "pre_ids) or 1 (a beam per prefix, those of pre_scores)");
  CheckInputs(ctx);
  if (ctx->IsRuntime()) return;  // the kernel sizes the outputs
  ctx->SetOutputShape("selected_ids", Shape({-1, 1}));
  ctx->SetOutputDtype("selected_ids", DataType::kInt64);
  ctx->SetOutputLoDLevel("selected_ids", 1);
  ctx->SetOutputShape("selected_scores", Shape({-1, 1}));
  ctx->SetOutputDtype("selected_scores", ctx->GetInputDtype("scores"));
  ctx->SetOutputLoDLevel("selected_scores", 1);
  if (ctx->HasOutput("parent_idx")) {
    ctx->SetOutputShape("parent_idx", Shape({-1}));
    ctx->SetOutputDtype("parent_idx", DataType::kInt32);
  }
}

}  // namespace

BeamGroups BeamSearchGroups(const ExecutionContext& ctx, const Tensor& pre_ids,
                            const Tensor& pre_scores, const Tensor& scores) {
  const int level = ctx.Attr<int32_t>("level");
  const int64_t rows = pre_ids.shape()[0];
  BeamGroups out;
  // Fluid's two levels: from scores, as Fluid reads them, else pre_ids.
  const char* slot = scores.lod_levels() >= 2 ? "scores" : "pre_ids";
  const Tensor& two = scores.lod_levels() >= 2 ? scores : pre_ids;
  if (two.lod_levels() >= 2) {
    const std::string what =
        std::string("beam_search: ") + slot + " " + Quote(ctx.InputName(slot));
    FLUID_ENFORCE(two.lod_levels() == 2, what, " carries ", two.lod_levels(),
                  " LoD levels ", LoDToString(two.all_lod()),
                  "; a beam carries 2 (source -> prefix -> candidates)");
    CheckLoDLevels(two.all_lod(), rows, what);
    out.groups = AbsoluteLoD(two.all_lod(), static_cast<size_t>(level));
    out.two_levels = true;
    return out;
  }
  const bool by_source = level == 0;
  slot = by_source ? "pre_ids" : "pre_scores";
  const LoD& lod = by_source ? pre_ids.lod() : pre_scores.lod();
  FLUID_ENFORCE(!lod.empty(), "beam_search: ", slot, " ",
                Quote(ctx.InputName(slot)), " carries no LoD; at level ", level,
                " its offsets group the prefixes into beams (feed the first "
                "step's ids with lod [[1] * N, [1] * N] lengths, one start per "
                "source sentence, and pass the previous step's outputs after "
                "it)");
  CheckLoD(
      lod, rows,
      std::string("beam_search: ") + slot + " " + Quote(ctx.InputName(slot)));
  out.groups = lod;
  return out;
}

REGISTER_OP(beam_search)
    .Doc("One step of beam search: the beam_size best candidates per source.")
    .Input("pre_ids",
           "int64 [rows, 1]: the prefixes' last ids, LoD: sources (2 levels: "
           "source -> prefix -> rows)")
    .Input("pre_scores", "[rows, 1]: the prefixes' accumulated scores")
    .OptionalInput("ids", "int64 [rows, K]: candidate ids (none: 0 to K-1)")
    .Input("scores", "[rows, K]: the candidates' scores")
    .Output("selected_ids",
            "int64 [n, 1], LoD: source -> pre_ids rows -> selected rows (one "
            "level: source -> selected rows)")
    .Output("selected_scores",
            "[n, 1], LoD: as selected_ids (one level: pre_ids row -> "
            "selected rows)")
    .OptionalOutput("parent_idx", "int32 [n]: the pre_ids row each extends")
    .Attr<int32_t>("level", 0, "0: a beam per source; 1: per prefix")
    .Attr<int32_t>("beam_size", 1, "how many candidates each source keeps")
    .InRange(1, std::numeric_limits<int32_t>::max())
    .Attr<int32_t>("end_id", 0, "the id that ends a sentence")
    .Attr<bool>("is_accumulated", true,
                "scores are accumulated (else probabilities, log-added to "
                "pre_scores)")
    .KernelDtypeFrom("scores")
    .SetInferShape(BeamSearchInferShape)
    .CPUKernel<float>(BeamSearchKernel<float>)
    .CPUKernel<double>(BeamSearchKernel<double>);

}  // namespace ops
}  // namespace fluid
