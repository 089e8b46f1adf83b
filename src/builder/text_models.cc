#include "src/builder/text_models.h"

#include <cmath>
#include <vector>

#include "src/builder/attention_layers.h"
#include "src/builder/embedding_layers.h"
#include "src/builder/initializer.h"
#include "src/builder/layers.h"
#include "src/builder/lr_schedules.h"
#include "src/builder/models.h"
#include "src/builder/recurrent_layers.h"
#include "src/builder/sequence_ops_layers.h"
#include "src/builder/tensor_layers.h"
#include "src/framework/program_desc.h"

namespace fluid {

namespace {

// The transformer's sizes.
constexpr int64_t kContext = 128;
constexpr int64_t kWidth = 128;
constexpr int64_t kHeads = 4;
constexpr int64_t kLayers = 4;
constexpr int64_t kFfnWidth = 512;
constexpr int64_t kWarmupSteps = 100;
constexpr int64_t kDecaySteps = 3000;

// The text CNN's sizes.
constexpr int64_t kMaxChars = 512;
constexpr int64_t kTopics = 8;
constexpr int64_t kCharWidth = 64;
constexpr int64_t kFilters = 128;
constexpr int64_t kLstmWidth = 128;

// An fc over the last dim of a [N, L, D] input.
std::string Fc3(ProgramBuilder* b, const std::string& x, int64_t size,
                const std::string& act = "") {
  return layers::Fc(b, x, size, act, /*num_flatten_dims=*/2);
}

std::string LayerNorm3(ProgramBuilder* b, const std::string& x) {
  layers::LayerNormOptions o;
  o.begin_norm_axis = 2;
  return layers::LayerNorm(b, x, o);
}

// [N, L, H * d] -> [N, H, L, d].
std::string SplitHeads(ProgramBuilder* b, const std::string& x) {
  return layers::Transpose(
      b, layers::Reshape(b, x, {0, 0, kHeads, kWidth / kHeads}), {0, 2, 1, 3});
}

// Causal multi-head self-attention of x [N, L, D] (Python's
// fluid.nets.scaled_dot_product_attention with q/k/v and output
// projections).
std::string SelfAttention(ProgramBuilder* b, const std::string& x,
                          const std::string& mask) {
  const std::string q = SplitHeads(b, Fc3(b, x, kWidth));
  const std::string k = SplitHeads(b, Fc3(b, x, kWidth));
  const std::string v = SplitHeads(b, Fc3(b, x, kWidth));
  const float scale = 1.0f / std::sqrt(static_cast<float>(kWidth / kHeads));
  std::string scores = layers::Matmul(b, layers::Scale(b, q, scale), k,
                                      /*transpose_x=*/false,
                                      /*transpose_y=*/true, 1.0f);
  scores = layers::ElementwiseAdd(b, scores, mask);
  std::string heads =
      layers::Matmul(b, layers::Softmax(b, scores), v, false, false, 1.0f);
  heads = layers::Reshape(b, layers::Transpose(b, heads, {0, 2, 1, 3}),
                          {0, 0, kWidth});
  return Fc3(b, heads, kWidth);
}

// A pre-LN decoder block.
std::string DecoderBlock(ProgramBuilder* b, const std::string& x,
                         const std::string& mask) {
  std::string h =
      layers::ElementwiseAdd(b, x, SelfAttention(b, LayerNorm3(b, x), mask));
  std::string f = Fc3(b, Fc3(b, LayerNorm3(b, h), kFfnWidth, "gelu"), kWidth);
  return layers::ElementwiseAdd(b, h, f);
}

// The per-token loss of the language model; its feeds are the job's.
std::string TransformerLoss(ProgramBuilder* b) {
  const std::string tokens =
      layers::Data(b, "tokens", Shape{kContext, 1}, DataType::kInt64);
  const std::string next =
      layers::Data(b, "next", Shape{kContext, 1}, DataType::kInt64);
  std::string x = layers::Embedding(b, tokens, {kTextVocabSize, kWidth});
  ParamAttr pos(Initializer::Gaussian(0.0f, 0.02f));
  const Shape pos_shape{kContext, kWidth};
  const std::string position = b->CreateParameter(
      "position_embedding.w_0", pos_shape, DataType::kFloat32, pos,
      ComputeFans(pos_shape, false), "transformer", "position_embedding");
  x = layers::ElementwiseAdd(b, x, position, /*axis=*/1);
  const std::string mask =
      layers::CausalAttentionMask(b, kContext, DataType::kFloat32);
  for (int64_t i = 0; i < kLayers; ++i) x = DecoderBlock(b, x, mask);
  const std::string logits = Fc3(b, LayerNorm3(b, x), kTextVocabSize);
  return layers::Mean(b, layers::SoftmaxWithCrossEntropy(b, logits, next));
}

// Linear warmup to the peak, then a cosine to 0 at decay_steps.
std::string WarmupCosine(ProgramBuilder* b, const TextModelOptions& o) {
  LrSchedule cosine;
  cosine.kind = "cosine_decay";
  cosine.learning_rate = o.optimizer.learning_rate;
  cosine.step_each_epoch = 1;
  cosine.epochs = o.decay_steps > 0 ? o.decay_steps : kDecaySteps;
  LrSchedule warmup;
  warmup.kind = "linear_lr_warmup";
  warmup.learning_rate_var = BuildLrSchedule(b, cosine);
  warmup.warmup_steps = o.warmup_steps > 0 ? o.warmup_steps : kWarmupSteps;
  warmup.start_lr = 0.0f;
  warmup.end_lr = o.optimizer.learning_rate;
  return BuildLrSchedule(b, warmup);
}

// A convolution of `width` over each sequence, max-pooled per sequence.
std::string ConvPool(ProgramBuilder* b, const std::string& seq, int64_t width) {
  layers::SequenceConvOptions conv;
  conv.filter_size = width;
  conv.act = "relu";
  return layers::SequencePool(b, layers::SequenceConv(b, seq, kFilters, conv),
                              "max");
}

// The embedded chars of each quotation, a level-1 LoD batch, from the
// feeds "words" (padded) and "length".
std::string EmbeddedSequences(ProgramBuilder* b) {
  const std::string words =
      layers::Data(b, "words", Shape{kMaxChars, 1}, DataType::kInt64);
  const std::string length =
      layers::Data(b, "length", Shape{}, DataType::kInt64);
  const std::string padded =
      layers::Embedding(b, words, {kTextVocabSize, kCharWidth});
  return layers::SequenceUnpad(b, padded, length);
}

// The class scores of the text CNN.
std::string TextCnnLogits(ProgramBuilder* b) {
  const std::string seq = EmbeddedSequences(b);
  const std::string pooled =
      layers::Concat(b, {ConvPool(b, seq, 3), ConvPool(b, seq, 5)}, 1);
  return layers::Fc(b, pooled, kTopics);
}

// The class scores of the LSTM classifier: the chars projected to the
// four gates, dynamic_lstm, its hidden states max-pooled and its last one.
std::string LstmLogits(ProgramBuilder* b) {
  const std::string gates =
      layers::Fc(b, EmbeddedSequences(b), 4 * kLstmWidth, "", 1, {}, {},
                 /*with_bias=*/false);
  layers::DynamicLstmOptions lstm;
  lstm.use_peepholes = false;
  const std::string hidden =
      layers::DynamicLstm(b, gates, 4 * kLstmWidth, lstm)[0];
  const std::string pooled =
      layers::Concat(b,
                     {layers::SequencePool(b, hidden, "max"),
                      layers::SequencePool(b, hidden, "last")},
                     1);
  return layers::Fc(b, pooled, kTopics);
}

}  // namespace

bool IsTextModel(const std::string& name) {
  return name == "transformer" || name == "textcnn" || name == "lstm";
}

OptimizerConfig DefaultTextOptimizer(const std::string& name) {
  OptimizerConfig c;
  c.type = "adam";
  c.learning_rate = name == "transformer" ? 1e-3f : 2e-3f;
  return c;
}

proto::TrainingJob BuildTextModel(const std::string& name,
                                  const TextModelOptions& options) {
  FLUID_ENFORCE(IsTextModel(name), "unknown text model '", name,
                "'; text models: transformer, textcnn, lstm");
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  ProgramBuilder b(job.mutable_main(), job.mutable_startup(), options.seed);
  OptimizerConfig opt = options.optimizer;
  if (name == "transformer") {
    RenameVar(job.mutable_main(), TransformerLoss(&b), "loss");
    job.add_feed_names("tokens");
    job.add_feed_names("next");
    job.set_data_set(proto::TrainingJob::CHARACTER_LM);
    job.add_metric_names("loss");
    opt.learning_rate_var = WarmupCosine(&b, options);
    opt.gradient_clip.kind = GradientClip::Kind::kByGlobalNorm;
    opt.gradient_clip.clip_norm = 1.0f;
  } else {
    const std::string logits =
        name == "textcnn" ? TextCnnLogits(&b) : LstmLogits(&b);
    const std::string label =
        layers::Data(&b, "label", Shape{1}, DataType::kInt64);
    RenameVar(
        job.mutable_main(),
        layers::Mean(&b, layers::SoftmaxWithCrossEntropy(&b, logits, label)),
        "loss");
    RenameVar(job.mutable_main(), layers::Accuracy(&b, logits, label),
              "accuracy");
    for (const char* feed : {"words", "length", "label"})
      job.add_feed_names(feed);
    job.set_data_set(proto::TrainingJob::TOPICS);
    job.add_metric_names("accuracy");
  }
  MakeOptimizer(opt)->Minimize(&b, "loss");
  job.set_loss_name("loss");
  *job.mutable_test() = CloneForTest(job.main());
  return job;
}

}  // namespace fluid
