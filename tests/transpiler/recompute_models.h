// Models for the recompute tests and benchmark: an mlp with dropout and a
// pre-LN transformer language model with dropout of any size, built from
// the builder's layers, and their synthetic batches.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "src/builder/attention_layers.h"
#include "src/builder/embedding_layers.h"
#include "src/builder/layers.h"
#include "src/builder/models.h"
#include "src/builder/norm_layers.h"
#include "src/builder/optimizer.h"
#include "src/builder/tensor_layers.h"
#include "src/framework/backward.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace testing {

// Names `loss` "loss", the job's loss, minimized by momentum at 0.05.
inline void MinimizeWithMomentum(ProgramBuilder* b, proto::TrainingJob* job,
                                 const std::string& loss) {
  RenameVar(job->mutable_main(), loss, "loss");
  OptimizerConfig opt;
  opt.type = "momentum";
  opt.learning_rate = 0.05f;
  MakeOptimizer(opt)->Minimize(b, "loss");
  job->set_loss_name("loss");
}

// x [16] -> (fc 32, relu, dropout 0.3) x 3 -> fc 4 -> softmax cross
// entropy; `hidden` receives each layer's relu output.
inline proto::TrainingJob MlpDropoutJob(std::vector<std::string>* hidden) {
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  ProgramBuilder b(job.mutable_main(), job.mutable_startup(), 7);
  std::string h = layers::Data(&b, "x", Shape{16});
  const std::string label =
      layers::Data(&b, "label", Shape{1}, DataType::kInt64);
  for (int i = 0; i < 3; ++i) {
    h = layers::Fc(&b, h, 32, "relu");
    hidden->push_back(h);
    h = layers::Dropout(&b, h, 0.3f);
  }
  const std::string logits = layers::Fc(&b, h, 4);
  MinimizeWithMomentum(
      &b, &job,
      layers::Mean(&b, layers::SoftmaxWithCrossEntropy(&b, logits, label)));
  return job;
}

inline FeedList MlpBatch(int step, int batch = 8) {
  std::mt19937 rng(100 + step);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor x, y;
  float* xp = x.mutable_data<float>(Shape{batch, 16});
  int64_t* yp = y.mutable_data<int64_t>(Shape{batch, 1});
  for (int n = 0; n < batch; ++n) {
    yp[n] = rng() % 4;
    for (int i = 0; i < 16; ++i) xp[n * 16 + i] = u(rng) + (i % 4 == yp[n]);
  }
  return {{"x", x}, {"label", y}};
}

struct TransformerSize {
  int64_t width = 32;
  int64_t heads = 2;
  int64_t layers = 2;
  int64_t seq = 16;
  int64_t vocab = 32;
  float dropout = 0.1f;
  // "adam" at 1e-3, or "momentum" at 0.05.
  std::string optimizer = "adam";
};

// Causal multi-head self-attention of x [N, L, D] with dropout on the
// attention weights.
inline std::string TestSelfAttention(ProgramBuilder* b, const std::string& x,
                                     const std::string& mask,
                                     const TransformerSize& s) {
  auto split = [&](const std::string& t) {
    return layers::Transpose(
        b, layers::Reshape(b, t, {0, 0, s.heads, s.width / s.heads}),
        {0, 2, 1, 3});
  };
  auto proj = [&](const std::string& t) {
    return layers::Fc(b, t, s.width, "", 2);
  };
  const std::string q = split(proj(x)), k = split(proj(x)), v = split(proj(x));
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.width / s.heads));
  std::string scores =
      layers::Matmul(b, layers::Scale(b, q, scale), k, false, true, 1.0f);
  scores = layers::ElementwiseAdd(b, scores, mask);
  std::string weights = layers::Softmax(b, scores);
  if (s.dropout > 0) weights = layers::Dropout(b, weights, s.dropout);
  std::string heads = layers::Matmul(b, weights, v, false, false, 1.0f);
  heads = layers::Reshape(b, layers::Transpose(b, heads, {0, 2, 1, 3}),
                          {0, 0, s.width});
  return proj(heads);
}

inline std::string TestLayerNorm(ProgramBuilder* b, const std::string& x) {
  layers::LayerNormOptions o;
  o.begin_norm_axis = 2;
  return layers::LayerNorm(b, x, o);
}

// A pre-LN language model: embedding, `layers` decoder blocks (attention
// and a 4x feed-forward part, each with dropout on its output before the
// residual add), layer norm, logits, the mean token cross entropy.
inline proto::TrainingJob TransformerJob(const TransformerSize& s) {
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  ProgramBuilder b(job.mutable_main(), job.mutable_startup(), 11);
  const std::string tokens =
      layers::Data(&b, "tokens", Shape{s.seq, 1}, DataType::kInt64);
  const std::string next =
      layers::Data(&b, "next", Shape{s.seq, 1}, DataType::kInt64);
  std::string x = layers::Embedding(&b, tokens, {s.vocab, s.width});
  const std::string mask =
      layers::CausalAttentionMask(&b, s.seq, DataType::kFloat32);
  auto dropout = [&](const std::string& t) {
    return s.dropout > 0 ? layers::Dropout(&b, t, s.dropout) : t;
  };
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string a = TestSelfAttention(&b, TestLayerNorm(&b, x), mask, s);
    x = layers::ElementwiseAdd(&b, x, dropout(a));
    std::string f =
        layers::Fc(&b, TestLayerNorm(&b, x), 4 * s.width, "gelu", 2);
    f = layers::Fc(&b, f, s.width, "", 2);
    x = layers::ElementwiseAdd(&b, x, dropout(f));
  }
  const std::string logits =
      layers::Fc(&b, TestLayerNorm(&b, x), s.vocab, "", 2);
  const std::string loss =
      layers::Mean(&b, layers::SoftmaxWithCrossEntropy(&b, logits, next));
  RenameVar(job.mutable_main(), loss, "loss");
  OptimizerConfig opt;
  opt.type = s.optimizer;
  opt.learning_rate = s.optimizer == "adam" ? 1e-3f : 0.05f;
  opt.gradient_clip.kind = GradientClip::Kind::kByGlobalNorm;
  opt.gradient_clip.clip_norm = 1.0f;
  MakeOptimizer(opt)->Minimize(&b, "loss");
  job.set_loss_name("loss");
  return job;
}

inline FeedList TransformerBatch(const TransformerSize& s, int batch,
                                 int step) {
  std::mt19937 rng(200 + step);
  Tensor tokens, next;
  int64_t* t = tokens.mutable_data<int64_t>(Shape{batch, s.seq, 1});
  int64_t* n = next.mutable_data<int64_t>(Shape{batch, s.seq, 1});
  for (int64_t i = 0; i < batch * s.seq; ++i) {
    t[i] = rng() % s.vocab;
    n[i] = (t[i] * 7 + 3) % s.vocab;
  }
  return {{"tokens", tokens}, {"next", next}};
}

}  // namespace testing
}  // namespace fluid
