// Layers that evaluate a model over many batches (registered in
// metric_layers.cc): auc, whose state lives in persistable variables that
// every run of the program updates, and chunk_eval, whose counts a
// ChunkEvaluator sums over batches in Python. accuracy, which needs no state,
// is in layers.cc.
#pragma once

#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

// What the auc layer returns, in Fluid's order: the AUC over every batch
// since the histograms were last zeroed, the AUC over the last slide_steps
// batches, and the four histograms (persistable int64 variables, zeroed by
// the startup program).
struct AucVars {
  std::string auc;             // float64 [1], over stat_pos / stat_neg
  std::string batch_auc;       // float64 [1], over the batch window
  std::string batch_stat_pos;  // [max(slide_steps, 1), num_thresholds + 1]
  std::string batch_stat_neg;
  std::string stat_pos;  // [1, num_thresholds + 1]
  std::string stat_neg;
};

// Fluid's auc layer: two auc ops on `input` ([N, 2] class probabilities, or
// [N, 1] the probability of class 1) and `label` (int64 [N, 1], 0 or 1),
// one keeping a window of the last `slide_steps` batches (0: every batch),
// one every batch. Each prediction falls in one of num_thresholds + 1
// buckets. Only the ROC curve is supported ("PR" is a kUnimplemented
// error); `topk` is accepted and unused, as in Fluid.
AucVars Auc(ProgramBuilder* b, const std::string& input,
            const std::string& label, const std::string& curve = "ROC",
            int64_t num_thresholds = 4095, int64_t topk = 1,
            int64_t slide_steps = 1);

// What the chunk_eval layer returns, in Fluid's order.
struct ChunkEvalVars {
  std::string precision, recall, f1_score;  // float32 [1]
  std::string num_infer_chunks, num_label_chunks, num_correct_chunks;  // int64
};

// Fluid's chunk_eval layer: the chunks (IOB, IOE, IOBES or plain tags of
// num_chunk_types types) of `input` against those of `label` (int64 tag
// ids, one level of LoD; or padded [N, S] with seq_length, int64 [N]).
ChunkEvalVars ChunkEval(ProgramBuilder* b, const std::string& input,
                        const std::string& label,
                        const std::string& chunk_scheme,
                        int64_t num_chunk_types,
                        const std::vector<int64_t>& excluded_chunk_types = {},
                        const std::string& seq_length = "");

}  // namespace layers
}  // namespace fluid
