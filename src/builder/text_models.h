// The built-in text models (BuildModel's "transformer", "textcnn" and
// "lstm"), as complete training jobs over the char-level fortunes data
// (src/data/fortunes.h).
#pragma once

#include <cstdint>
#include <string>

#include "proto/framework.pb.h"
#include "src/builder/optimizer.h"

namespace fluid {

// The sizes both text models share with their data: ids below
// kTextVocabSize (the fortunes char vocabulary cut at that many ids, rarer
// code points being <unk>).
inline constexpr int64_t kTextVocabSize = 256;

struct TextModelOptions {
  OptimizerConfig optimizer;  // type and peak learning rate
  uint64_t seed = 1;
  // transformer: the learning rate rises linearly from 0 to the peak over
  // warmup_steps, then follows a cosine from the peak down to 0 at
  // decay_steps (counted from the first step; past it the cosine rises
  // again, as Fluid's cosine_decay does); 0: the defaults, 100 and 3000.
  int64_t warmup_steps = 0;
  int64_t decay_steps = 0;
};

// "transformer": a decoder-only char language model. Feeds "tokens" and
// "next", int64 [N, 128, 1] (a window of the stream and the same window one
// token on). Token embedding (256 x 128) plus a learned position embedding
// [128, 128]; 4 pre-LN blocks (x + attention(layer_norm(x)), then x +
// ffn(layer_norm(x))) of causal multi-head self-attention (4 heads of 32,
// q/k/v and output projections) and a GELU feed-forward net 128-512-128;
// a final layer_norm and an fc to the 256 logits of the next token. "loss"
// is the mean cross entropy over every token of the batch, and the job's
// metric is "loss" itself (the trainer reports perplexity, exp of the mean
// loss per token). Default Adam(peak lr 1e-3, linear warmup 100 steps then
// cosine decay to 0 at step 3000), gradients clipped to global norm 1.0.
//
// "textcnn": topic classification of a quotation among the 8 largest
// fortunes topics. Feeds "words" int64 [N, 512, 1] (char ids, padded with
// 0 past "length"), "length" int64 [N] and "label" int64 [N, 1]. A
// 256 x 64 embedding, then the padded rows are dropped (sequence_unpad:
// a level-1 LoD batch of each quotation's chars), sequence_conv of widths
// 3 and 5 (128 filters each, ReLU) each max-pooled over its sequence
// (sequence_pool), concatenated, and an fc to the 8 classes; reports
// "loss" and "accuracy". Quotations longer than 512 chars are cut. Default
// Adam(lr 2e-3).
//
// "lstm": the same task, feeds and metrics as "textcnn", by recurrence: the
// embedded chars (sequence_unpad) projected by an fc without bias to the
// four gates of a dynamic_lstm of width 128 (no peepholes), its hidden
// states max-pooled and its last one (sequence_pool "last"), concatenated,
// an fc to the 8 classes. Default Adam(lr 2e-3).
proto::TrainingJob BuildTextModel(const std::string& name,
                                  const TextModelOptions& options);

// Whether `name` is one of the text models.
bool IsTextModel(const std::string& name);

// The text model's default optimizer.
OptimizerConfig DefaultTextOptimizer(const std::string& name);

}  // namespace fluid
