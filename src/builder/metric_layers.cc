#include "src/builder/metric_layers.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "src/builder/layer_registry.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {

namespace {

void CheckAucArgs(const std::string& curve, int64_t num_thresholds,
                  int64_t topk, int64_t slide_steps) {
  FLUID_ENFORCE_CODE(curve != "PR", ErrorCode::kUnimplemented,
                     "layer 'auc': argument 'curve': 'PR' (the area under the "
                     "precision-recall curve) is not supported; only 'ROC' "
                     "is computed");
  FLUID_ENFORCE(curve == "ROC", "layer 'auc': argument 'curve' must be 'ROC' ",
                "(or 'PR', not supported), got ", Quote(curve));
  FLUID_ENFORCE(num_thresholds >= 1 && num_thresholds <= (int64_t{1} << 24),
                "layer 'auc': argument 'num_thresholds' must be in [1, 2^24] ",
                "(a float32 prediction resolves no finer), got ",
                num_thresholds);
  FLUID_ENFORCE(topk >= 1, "layer 'auc': argument 'topk' must be positive, ",
                "got ", topk);
  FLUID_ENFORCE(slide_steps >= 0 && slide_steps <= (int64_t{1} << 20),
                "layer 'auc': argument 'slide_steps' must be 0 (every batch) ",
                "or a window of at most 2^20 batches, got ", slide_steps);
}

// One auc op over the histograms `pos` and `neg`, updated in place.
std::string AppendAuc(ProgramBuilder* b, const std::string& layer,
                      const std::string& input, const std::string& label,
                      const std::string& pos, const std::string& neg,
                      int64_t num_thresholds, int64_t slide_steps) {
  std::string out = b->CreateTmpVar(layer + ".tmp", DataType::kFloat64);
  b->AppendOp(
      MakeOp("auc",
             {{"Predict", {input}},
              {"Label", {label}},
              {"StatPos", {pos}},
              {"StatNeg", {neg}}},
             {{"AUC", {out}}, {"StatPosOut", {pos}}, {"StatNegOut", {neg}}},
             {{"curve", std::string("ROC")},
              {"num_thresholds", static_cast<int32_t>(num_thresholds)},
              {"slide_steps", static_cast<int32_t>(slide_steps)}}));
  return out;
}

}  // namespace

AucVars Auc(ProgramBuilder* b, const std::string& input,
            const std::string& label, const std::string& curve,
            int64_t num_thresholds, int64_t topk, int64_t slide_steps) {
  CheckAucArgs(curve, num_thresholds, topk, slide_steps);
  const std::string layer = b->UniqueName("auc");
  const int64_t buckets = num_thresholds + 1;
  const Shape window{slide_steps > 0 ? slide_steps : 1, buckets};
  AucVars v;
  v.batch_stat_pos = b->CreatePersistable(layer + ".batch_stat_pos", window,
                                          DataType::kInt64, 0.0f);
  v.batch_stat_neg = b->CreatePersistable(layer + ".batch_stat_neg", window,
                                          DataType::kInt64, 0.0f);
  v.stat_pos = b->CreatePersistable(layer + ".stat_pos", Shape{1, buckets},
                                    DataType::kInt64, 0.0f);
  v.stat_neg = b->CreatePersistable(layer + ".stat_neg", Shape{1, buckets},
                                    DataType::kInt64, 0.0f);
  // Fluid's order: the batch AUC's op first, then the global one's.
  v.batch_auc = AppendAuc(b, layer, input, label, v.batch_stat_pos,
                          v.batch_stat_neg, num_thresholds, slide_steps);
  v.auc = AppendAuc(b, layer, input, label, v.stat_pos, v.stat_neg,
                    num_thresholds, 0);
  return v;
}

REGISTER_LAYER(auc)
    .Doc(
        "(auc, batch_auc, batch_stat_pos, batch_stat_neg, stat_pos, "
        "stat_neg): the area under the ROC curve of input's probability of "
        "class 1 against label over every batch, and over the last "
        "slide_steps batches (0: every batch), from persistable histograms "
        "of num_thresholds + 1 buckets zeroed by the startup program. topk is "
        "unused, as in Fluid.")
    .Var("input")
    .Var("label")
    .String("curve", "ROC")
    .Int("num_thresholds", 4095)
    .Int("topk", 1)
    .Int("slide_steps", 1)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      AucVars v =
          Auc(b, a.Var("input"), a.Var("label"), a.String("curve"),
              a.Int("num_thresholds"), a.Int("topk"), a.Int("slide_steps"));
      return std::vector<std::string>{
          v.auc,      v.batch_auc, v.batch_stat_pos, v.batch_stat_neg,
          v.stat_pos, v.stat_neg};
    });

ChunkEvalVars ChunkEval(ProgramBuilder* b, const std::string& input,
                        const std::string& label,
                        const std::string& chunk_scheme,
                        int64_t num_chunk_types,
                        const std::vector<int64_t>& excluded_chunk_types,
                        const std::string& seq_length) {
  FLUID_ENFORCE(num_chunk_types >= 1 && num_chunk_types <= INT32_MAX,
                "layer 'chunk_eval': argument 'num_chunk_types' must be in "
                "[1, 2^31), got ",
                num_chunk_types);
  ChunkEvalVars v;
  v.precision = b->CreateTmpVar("chunk_eval.precision", DataType::kFloat32);
  v.recall = b->CreateTmpVar("chunk_eval.recall", DataType::kFloat32);
  v.f1_score = b->CreateTmpVar("chunk_eval.f1_score", DataType::kFloat32);
  v.num_infer_chunks = b->CreateTmpVar("chunk_eval.infer", DataType::kInt64);
  v.num_label_chunks = b->CreateTmpVar("chunk_eval.label", DataType::kInt64);
  v.num_correct_chunks =
      b->CreateTmpVar("chunk_eval.correct", DataType::kInt64);
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"Inference", {input}}, {"Label", {label}}};
  if (!seq_length.empty()) in.push_back({"SeqLength", {seq_length}});
  b->AppendOp(
      MakeOp("chunk_eval", in,
             {{"Precision", {v.precision}},
              {"Recall", {v.recall}},
              {"F1-Score", {v.f1_score}},
              {"NumInferChunks", {v.num_infer_chunks}},
              {"NumLabelChunks", {v.num_label_chunks}},
              {"NumCorrectChunks", {v.num_correct_chunks}}},
             {{"num_chunk_types", static_cast<int32_t>(num_chunk_types)},
              {"chunk_scheme", chunk_scheme},
              {"excluded_chunk_types",
               std::vector<int32_t>(excluded_chunk_types.begin(),
                                    excluded_chunk_types.end())}}));
  return v;
}

REGISTER_LAYER(chunk_eval)
    .Doc(
        "(precision, recall, f1_score, num_infer_chunks, num_label_chunks, "
        "num_correct_chunks) of input's chunks against label's, tags in "
        "chunk_scheme (IOB, IOE, IOBES or plain) of num_chunk_types types; "
        "seq_length for padded [N, S] inputs.")
    .Var("input")
    .Var("label")
    .String("chunk_scheme")
    .Int("num_chunk_types")
    .IntList("excluded_chunk_types", {})
    .String("seq_length", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      ChunkEvalVars v =
          ChunkEval(b, a.Var("input"), a.Var("label"), a.String("chunk_scheme"),
                    a.Int("num_chunk_types"), a.IntList("excluded_chunk_types"),
                    a.String("seq_length"));
      return std::vector<std::string>{v.precision,        v.recall,
                                      v.f1_score,         v.num_infer_chunks,
                                      v.num_label_chunks, v.num_correct_chunks};
    });

}  // namespace layers
}  // namespace fluid
