// The text models: their sizes, the transformer's causal mask and learning
// rate schedule, and that both learn a small synthetic task.
#include "src/builder/text_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "src/builder/models.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace {

int64_t ParameterCount(const proto::TrainingJob& job) {
  int64_t n = 0;
  for (const auto& v : job.main().blocks(0).vars())
    if (v.trainable()) n += VarShape(v).Product(0, VarShape(v).rank());
  return n;
}

// The first output of the first op of `type` in `program`.
std::string OutputOf(const proto::ProgramDesc& program, const std::string& type,
                     const std::string& slot) {
  for (const auto& op : program.blocks(0).ops())
    if (op.type() == type) return OpOutput(op, slot)[0];
  return "";
}

std::string InputOf(const proto::ProgramDesc& program, const std::string& type,
                    const std::string& slot) {
  for (const auto& op : program.blocks(0).ops())
    if (op.type() == type) return OpInput(op, slot)[0];
  return "";
}

// [n, 128, 1] windows of a cyclic pattern a, b, c, ... of `period` ids,
// each from a random phase; `next` the same one id on.
void PatternBatch(std::mt19937* rng, int64_t n, int64_t period, Tensor* tokens,
                  Tensor* next) {
  int64_t* t = tokens->mutable_data<int64_t>(Shape{n, 128, 1});
  int64_t* x = next->mutable_data<int64_t>(Shape{n, 128, 1});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t phase = (*rng)() % period;
    for (int64_t k = 0; k < 128; ++k) {
      t[i * 128 + k] = 3 + (phase + k) % period;
      x[i * 128 + k] = 3 + (phase + k + 1) % period;
    }
  }
}

TEST(TextModels, AreBuiltInModels) {
  const auto& names = BuiltInModels();
  for (const char* name : {"transformer", "textcnn", "lstm"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end());
    EXPECT_EQ(DefaultOptimizer(name).type, "adam");
  }
  EXPECT_THROW(BuildTextModel("lenet", {}), Error);
}

// 4 blocks of width 128 (FFN 512), embeddings 256 x 128 and 128 x 128.
TEST(TextModels, TransformerSizes) {
  const proto::TrainingJob job = BuildModel("transformer");
  const int64_t d = 128, f = 512, v = 256, l = 128;
  const int64_t block = 4 * d + 4 * (d * d + d) + (d * f + f) + (f * d + d);
  EXPECT_EQ(ParameterCount(job), v * d + l * d + 4 * block + 2 * d + d * v + v);
  int softmax = 0, clip = 0;
  for (const auto& op : job.main().blocks(0).ops()) {
    softmax += op.type() == "softmax";
    clip += op.type() == "squared_l2_norm";
  }
  EXPECT_EQ(softmax, 4);  // one attention per block
  EXPECT_GT(clip, 0);     // global-norm clipping
  EXPECT_EQ(job.metric_names(0), "loss");
}

// The learning rate rises linearly over the warmup, then follows a cosine.
TEST(TextModels, TransformerWarmupThenCosine) {
  ModelOptions o;
  o.warmup_steps = 4;
  o.decay_steps = 8;
  const proto::TrainingJob job = BuildModel("transformer", o);
  const std::string lr = InputOf(job.main(), "adam", "LearningRate");
  Executor exe;
  Scope scope;
  exe.RunOnce(job.startup(), &scope);
  auto main = exe.Prepare(job.main(), &scope);
  std::mt19937 rng(1);
  Tensor tokens, next;
  PatternBatch(&rng, 1, 5, &tokens, &next);
  const double peak = 1e-3;
  for (int step = 0; step < 7; ++step) {
    std::vector<Tensor> out;
    exe.Run(main.get(), {{"tokens", tokens}, {"next", next}}, {lr}, &out);
    const double want = step < 4 ? peak * step / 4
                                 : 0.5 * peak * (std::cos(step * M_PI / 8) + 1);
    EXPECT_NEAR(out[0].data<double>()[0], want, 1e-9) << "step " << step;
  }
}

// A token's loss does not depend on the tokens after it.
TEST(TextModels, TransformerIsCausal) {
  const proto::TrainingJob job = BuildModel("transformer");
  const std::string per_token =
      OutputOf(job.test(), "softmax_with_cross_entropy", "Loss");
  Executor exe;
  Scope scope;
  exe.RunOnce(job.startup(), &scope);
  auto test = exe.Prepare(job.test(), &scope);
  std::mt19937 rng(2);
  Tensor tokens, next;
  PatternBatch(&rng, 1, 7, &tokens, &next);
  std::vector<Tensor> before, after;
  exe.Run(test.get(), {{"tokens", tokens}, {"next", next}}, {per_token},
          &before);
  tokens.mutable_data<int64_t>()[100] = 60;
  exe.Run(test.get(), {{"tokens", tokens}, {"next", next}}, {per_token},
          &after);
  const float* a = before[0].data<float>();
  const float* b = after[0].data<float>();
  for (int k = 0; k < 100; ++k) EXPECT_EQ(a[k], b[k]) << "token " << k;
  EXPECT_NE(a[100], b[100]);
}

TEST(TextModels, TransformerLearnsAPattern) {
  ModelOptions o;
  o.warmup_steps = 2;
  o.default_optimizer = false;
  o.optimizer = DefaultOptimizer("transformer");
  o.optimizer.learning_rate = 3e-3f;
  const proto::TrainingJob job = BuildModel("transformer", o);
  Executor exe;
  Scope scope;
  exe.RunOnce(job.startup(), &scope);
  auto main = exe.Prepare(job.main(), &scope);
  std::mt19937 rng(3);
  Tensor tokens, next;
  std::vector<double> losses;
  for (int step = 0; step < 12; ++step) {
    PatternBatch(&rng, 2, 6, &tokens, &next);
    std::vector<Tensor> out;
    exe.Run(main.get(), {{"tokens", tokens}, {"next", next}}, {"loss"}, &out);
    losses.push_back(out[0].data<float>()[0]);
  }
  EXPECT_GT(losses.front(), 5.0);
  EXPECT_LT(losses.back(), 0.5 * losses.front());
}

// Sequences of 1 to 40 ids (padded to 512); the class is which of ids 5 and
// 6 a sequence holds; the others are noise ids 10-40.
void TopicBatch(std::mt19937* rng, int64_t n, Tensor* words, Tensor* length,
                Tensor* label) {
  int64_t* w = words->mutable_data<int64_t>(Shape{n, 512, 1});
  int64_t* len = length->mutable_data<int64_t>(Shape{n});
  int64_t* y = label->mutable_data<int64_t>(Shape{n, 1});
  std::fill(w, w + n * 512, 0);
  for (int64_t i = 0; i < n; ++i) {
    len[i] = 1 + (*rng)() % 40;
    y[i] = (*rng)() % 2;
    for (int64_t k = 0; k < len[i]; ++k) w[i * 512 + k] = 10 + (*rng)() % 30;
    w[i * 512 + (*rng)() % len[i]] = 5 + y[i];
  }
}

// Both topic classifiers learn which marker a variable-length sequence
// carries (TopicBatch).
TEST(TextModels, ClassifiersLearnVariableLengthSequences) {
  for (const char* name : {"textcnn", "lstm"}) {
    SCOPED_TRACE(name);
    const proto::TrainingJob job = BuildModel(name);
    EXPECT_EQ(OutputOf(job.main(), "sequence_unpad", "Out").empty(), false);
    Executor exe;
    Scope scope;
    exe.RunOnce(job.startup(), &scope);
    auto main = exe.Prepare(job.main(), &scope);
    std::mt19937 rng(4);
    Tensor words, length, label;
    double first = 0, last = 0;
    for (int step = 0; step < 40; ++step) {
      TopicBatch(&rng, 16, &words, &length, &label);
      std::vector<Tensor> out;
      exe.Run(main.get(),
              {{"words", words}, {"length", length}, {"label", label}},
              {"loss", "accuracy"}, &out);
      const double loss = out[0].data<float>()[0];
      if (step < 5) first += loss / 5;
      if (step >= 35) last += loss / 5;
    }
    EXPECT_LT(last, 0.5 * first);
  }
}

}  // namespace
}  // namespace fluid
