// beam_search_decode: the sentences a beam search found, walked back from
// the tensor arrays of its steps' selected ids and scores (beam_search's
// outputs, one slot a step, slot 0 the start ids), as Fluid's op does:
// SentenceIds and SentenceScores [tokens], each source's hypotheses best
// final score first. The LoD each output carries: beam_search_decode_op.h.
// Not differentiable.
#include "ops/beam_search_decode_op.h"

#include <limits>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

const LoDTensorArray& StepArray(const ExecutionContext& ctx,
                                const std::string& slot) {
  Variable* var = ctx.InputVar(slot);
  FLUID_ENFORCE(var != nullptr && var->HasValue() && !var->IsTensor(),
                "beam_search_decode: ", slot, " ", Quote(ctx.InputName(slot)),
                " holds no tensor array (build it with create_array and "
                "array_write, one slot per step)");
  return var->Get<LoDTensorArray>();
}

// Slot t of an array on the host, checked to be [rows, 1] or [rows] of
// `dtype` with a LoD.
Tensor HostStep(const ExecutionContext& ctx, const std::string& slot,
                const LoDTensorArray& array, size_t t, DataType dtype) {
  const std::string what = "beam_search_decode: step " + std::to_string(t) +
                           " of " + slot + " " + Quote(ctx.InputName(slot));
  FLUID_ENFORCE(array[t].initialized(), what, " was never written");
  Tensor host;
  host.CopyFrom(array[t], Place::CPU());
  const Shape& s = host.shape();
  FLUID_ENFORCE(host.dtype() == dtype, what, " is ", DataTypeName(host.dtype()),
                "; it must be ", DataTypeName(dtype));
  FLUID_ENFORCE(s.rank() == 1 || (s.rank() == 2 && s[1] == 1), what,
                " has shape ", s, "; it must be [rows, 1]");
  return host;
}

void CheckStepLoDs(const std::string& what, const Tensor& ids,
                   const Tensor& scores, const Tensor* prev_ids) {
  const int64_t rows = ids.shape()[0];
  FLUID_ENFORCE(scores.shape()[0] == rows, what, ": Scores has ",
                scores.shape()[0], " rows but Ids has ", rows);
  FLUID_ENFORCE(ids.has_lod(), what,
                ": Ids carries no LoD (the sources: feed the first ids with "
                "one sequence per source sentence, [0, 1, ..., N])");
  CheckLoD(ids.lod(), rows, what + ": Ids");
  if (prev_ids == nullptr) return;
  FLUID_ENFORCE(LoDCount(ids.lod()) == LoDCount(prev_ids->lod()), what,
                ": Ids holds ", LoDCount(ids.lod()),
                " sources but the step before ", LoDCount(prev_ids->lod()));
  if (prev_ids->shape()[0] == 0) {  // every source had finished
    FLUID_ENFORCE(rows == 0, what, ": ", rows,
                  " rows follow a step without any");
    return;
  }
  const LoD& parents = scores.lod();
  FLUID_ENFORCE(LoDCount(parents) == prev_ids->shape()[0], what,
                ": Scores' LoD ", LoDToString(parents),
                " must give each of "
                "the step before's ",
                prev_ids->shape()[0],
                " rows its extensions (beam_search's selected_scores)");
  CheckLoD(parents, rows, what + ": Scores");
  // A source's rows extend its own rows of the step before.
  for (size_t s = 0; s < prev_ids->lod().size(); ++s)
    FLUID_ENFORCE(parents[prev_ids->lod()[s]] == ids.lod()[s], what,
                  ": the sources of Ids ", LoDToString(ids.lod()),
                  " do not follow from the step before's ",
                  LoDToString(prev_ids->lod()), " and Scores' parents ",
                  LoDToString(parents));
}

void BeamSearchDecodeInferShape(InferShapeContext* ctx) {
  if (ctx->IsRuntime()) return;  // arrays in, the kernel sizes the outputs
  const DataType it = ctx->GetInputDtype("Ids");
  FLUID_ENFORCE(it == DataType::kInt64, "beam_search_decode: Ids ",
                Quote(ctx->InputName("Ids")), " is an array of ",
                DataTypeName(it), "; it must hold int64 ids");
  const DataType st = ctx->GetInputDtype("Scores");
  FLUID_ENFORCE(st == DataType::kFloat32 || st == DataType::kFloat64,
                "beam_search_decode: Scores ", Quote(ctx->InputName("Scores")),
                " is an array of ", DataTypeName(st),
                "; it must hold float32 or float64 scores");
  ctx->SetOutputShape("SentenceIds", Shape({-1}));
  ctx->SetOutputDtype("SentenceIds", DataType::kInt64);
  ctx->SetOutputLoDLevel("SentenceIds", 1);
  ctx->SetOutputShape("SentenceScores", Shape({-1}));
  ctx->SetOutputDtype("SentenceScores", st);
  ctx->SetOutputLoDLevel("SentenceScores", 1);
}

}  // namespace

// A step of Fluid's two levels ([source -> rows of the step before, row of
// the step before -> rows]) in the one-level form: Ids the sources' rows,
// Scores the parents'. Every step must have the first step's form.
void ToOneLevel(const std::string& what, bool two_levels, Tensor* ids,
                Tensor* scores) {
  FLUID_ENFORCE((ids->lod_levels() >= 2) == two_levels, what, ": Ids carries ",
                ids->lod_levels(), " LoD level(s) but step 0 ",
                two_levels ? "2" : "1",
                "; every step must carry the same (beam_search's outputs)");
  if (!two_levels) return;
  const LoDLevels levels = ids->all_lod();
  FLUID_ENFORCE(levels.size() == 2, what, ": Ids carries ", levels.size(),
                " LoD levels ", LoDToString(levels),
                "; a beam carries 2 (source -> prefix -> rows)");
  CheckLoDLevels(levels, ids->shape()[0], what + ": Ids");
  FLUID_ENFORCE(scores->lod_levels() < 2 || scores->all_lod() == levels, what,
                ": Scores' LoD ", LoDToString(scores->all_lod()),
                " differs from Ids' ", LoDToString(levels),
                " (beam_search gives both the same)");
  ids->set_lod(AbsoluteLoD(levels, 0));
  scores->set_lod(levels[1]);
}

std::vector<Tensor> BeamDecodeHostSteps(const ExecutionContext& ctx,
                                        DataType score_type, bool* two_levels) {
  const LoDTensorArray& ids = StepArray(ctx, "Ids");
  const LoDTensorArray& scores = StepArray(ctx, "Scores");
  FLUID_ENFORCE(!ids.empty() && ids.size() == scores.size(),
                "beam_search_decode: Ids ", Quote(ctx.InputName("Ids")),
                " holds ", ids.size(), " steps and Scores ",
                Quote(ctx.InputName("Scores")), " ", scores.size(),
                "; they must hold the same steps, at least one");
  std::vector<Tensor> host;
  for (size_t t = 0; t < ids.size(); ++t) {
    host.push_back(HostStep(ctx, "Ids", ids, t, DataType::kInt64));
    host.push_back(HostStep(ctx, "Scores", scores, t, score_type));
    if (t == 0) *two_levels = host[0].lod_levels() >= 2;
    ToOneLevel("beam_search_decode: step " + std::to_string(t), *two_levels,
               &host[2 * t], &host[2 * t + 1]);
    CheckStepLoDs("beam_search_decode: step " + std::to_string(t), host[2 * t],
                  host[2 * t + 1], t > 0 ? &host[2 * t - 2] : nullptr);
  }
  return host;
}

REGISTER_OP(beam_search_decode)
    .Doc("The sentences of a beam search, walked back from its steps.")
    .Input("Ids", "array of the steps' selected ids (LoD: sources)")
    .Input("Scores", "array of the steps' scores (LoD: parent rows)")
    .Output("SentenceIds",
            "int64 [tokens], LoD: source -> hypotheses -> tokens (steps of "
            "one level: source -> tokens)")
    .Output("SentenceScores",
            "[tokens], LoD: as SentenceIds (steps of one level: hypothesis -> "
            "tokens)")
    .Attr<int32_t>("beam_size", 1, "the beam width of the search")
    .InRange(1, std::numeric_limits<int32_t>::max())
    .Attr<int32_t>("end_id", 0, "the id that ends a sentence")
    .KernelDtypeFrom("Scores")
    .SetInferShape(BeamSearchDecodeInferShape)
    .CPUKernel<float>(BeamSearchDecodeKernel<float>)
    .CPUKernel<double>(BeamSearchDecodeKernel<double>);

}  // namespace ops
}  // namespace fluid
