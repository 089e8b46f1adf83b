// The optimizers beyond sgd/momentum/adam, weight decay and gradient
// clipping as minimize() builds them: the op sequence after the backward
// pass (clip, then regularization, then the updates, all with the optimize
// role) and what one step computes, against the same step of a program
// without the knob.
#include <gtest/gtest.h>

#include <cmath>

#include "src/builder/layers.h"
#include "src/builder/optimizer.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace {

struct Programs {
  proto::ProgramDesc main = NewProgram();
  proto::ProgramDesc startup = NewProgram();
};

// x[2, 4] -> fc 8 tanh -> fc 3 -> softmax cross entropy -> mean; the first
// fc's weight gets `w0`.
std::string Mlp(ProgramBuilder* b, const ParamAttr& w0 = {}) {
  std::string x = layers::Data(b, "x", Shape{4});
  std::string label = layers::Data(b, "label", Shape{1}, DataType::kInt64);
  std::string h = layers::Fc(b, x, 8, "tanh", 1, w0);
  std::string logits = layers::Fc(b, h, 3);
  return layers::Mean(b, layers::SoftmaxWithCrossEntropy(b, logits, label));
}

FeedList Batch() {
  Tensor xs, ls;
  float* xp = xs.mutable_data<float>(Shape{2, 4});
  for (int i = 0; i < 8; ++i) xp[i] = 0.3f * i - 1.0f;
  int64_t* lp = ls.mutable_data<int64_t>(Shape{2, 1});
  lp[0] = 0;
  lp[1] = 2;
  return {{"x", xs}, {"label", ls}};
}

// Runs startup and one step; returns the fetched vars (taken after the
// step) and the parameters before it.
struct Step {
  std::vector<std::vector<float>> fetched, before;
};
Step RunStep(const Programs& p, const std::vector<std::string>& fetch,
             const std::vector<std::string>& params) {
  Executor exe;
  Scope scope;
  exe.RunOnce(p.startup, &scope);
  Step s;
  for (const auto& name : params) {
    const Tensor& t = scope.GetVar(name)->GetTensor();
    s.before.emplace_back(t.data<float>(), t.data<float>() + t.numel());
  }
  std::vector<Tensor> out;
  exe.RunOnce(p.main, &scope, Batch(), fetch, &out);
  for (const Tensor& t : out)
    s.fetched.emplace_back(t.data<float>(), t.data<float>() + t.numel());
  return s;
}

// The op types after the last backward op.
std::vector<std::string> AfterBackward(const proto::ProgramDesc& p) {
  std::vector<std::string> t;
  for (const auto& op : p.blocks(0).ops()) {
    if (OpRoleOf(op) & static_cast<int>(OpRole::kBackward)) t.clear();
    if (OpRoleOf(op) & static_cast<int>(OpRole::kOptimize))
      t.push_back(op.type());
    else if (!t.empty())
      ADD_FAILURE() << op.type() << " without the optimize role after them";
  }
  return t;
}

TEST(OptimizerKnobs, EveryStateOptimizerUpdatesEveryParameter) {
  for (std::string type : {"adagrad", "decayed_adagrad", "rmsprop", "adamax",
                           "adadelta", "lars_momentum"}) {
    Programs p;
    ProgramBuilder b(&p.main, &p.startup, 5);
    OptimizerConfig cfg;
    cfg.type = type;
    cfg.learning_rate = 0.1f;
    ParamGradList pairs = MakeOptimizer(cfg)->Minimize(&b, Mlp(&b));
    ASSERT_EQ(pairs.size(), 4u) << type;
    std::vector<std::string> want(4, type);
    if (type == "adamax") want.insert(want.end(), 4, "scale");
    EXPECT_EQ(AfterBackward(p.main), want);
    std::vector<std::string> params;
    for (const auto& pg : pairs) params.push_back(pg.first);
    Step s = RunStep(p, params, params);
    for (size_t k = 0; k < params.size(); ++k) {
      double diff = 0;
      for (size_t i = 0; i < s.before[k].size(); ++i)
        diff += std::fabs(s.fetched[k][i] - s.before[k][i]);
      EXPECT_GT(diff, 0) << type << " " << params[k];
    }
  }
}

// The gradients after one step of `p` (rewritten in place by the knobs).
std::vector<std::vector<float>> Grads(ProgramBuilder* b, const Programs& p,
                                      const OptimizerConfig& cfg,
                                      const std::string& loss) {
  ParamGradList pairs = MakeOptimizer(cfg)->Minimize(b, loss);
  std::vector<std::string> grads, params;
  for (const auto& pg : pairs) {
    params.push_back(pg.first);
    grads.push_back(pg.second);
  }
  return RunStep(p, grads, params).fetched;
}

TEST(OptimizerKnobs, L2DecayAddsCoeffTimesParamAndParamAttrOverrides) {
  OptimizerConfig plain;
  plain.type = "sgd";
  Programs p0;
  ProgramBuilder b0(&p0.main, &p0.startup, 9);
  auto g0 = Grads(&b0, p0, plain, Mlp(&b0));

  OptimizerConfig decayed = plain;
  decayed.regularization = {Regularization::Kind::kL2, 0.5f};
  ParamAttr l1;
  l1.regularizer = {Regularization::Kind::kL1, 0.25f};
  Programs p1;
  ProgramBuilder b1(&p1.main, &p1.startup, 9);
  std::string loss = Mlp(&b1, l1);
  auto g1 = Grads(&b1, p1, decayed, loss);
  // First fc weight: L1 (its own); the rest: the optimizer's L2.
  EXPECT_EQ(AfterBackward(p1.main),
            (std::vector<std::string>{"sign", "scale", "sum", "scale", "sum",
                                      "scale", "sum", "scale", "sum", "sgd",
                                      "sgd", "sgd", "sgd"}));
  Executor exe;
  Scope scope;
  exe.RunOnce(p1.startup, &scope);
  const std::vector<std::string> params = {"fc_0.w_0", "fc_0.b_0", "fc_1.w_0",
                                           "fc_1.b_0"};
  for (size_t k = 0; k < params.size(); ++k) {
    const Tensor& t = scope.GetVar(params[k])->GetTensor();
    for (int64_t i = 0; i < t.numel(); ++i) {
      const float w = t.data<float>()[i];
      const float decay =
          k == 0 ? 0.25f * (w > 0 ? 1.0f : (w < 0 ? -1.0f : 0.0f)) : 0.5f * w;
      EXPECT_NEAR(g1[k][i], g0[k][i] + decay, 1e-6) << params[k] << " " << i;
    }
  }
}

TEST(OptimizerKnobs, GlobalNormClipScalesAllGradientsTogether) {
  OptimizerConfig plain;
  plain.type = "sgd";
  Programs p0;
  ProgramBuilder b0(&p0.main, &p0.startup, 9);
  auto g0 = Grads(&b0, p0, plain, Mlp(&b0));
  double sq = 0;
  for (const auto& g : g0)
    for (float v : g) sq += double(v) * v;
  const double norm = std::sqrt(sq);

  OptimizerConfig clipped = plain;
  clipped.gradient_clip.kind = GradientClip::Kind::kByGlobalNorm;
  clipped.gradient_clip.clip_norm = static_cast<float>(norm / 4);
  Programs p1;
  ProgramBuilder b1(&p1.main, &p1.startup, 9);
  auto g1 = Grads(&b1, p1, clipped, Mlp(&b1));
  const double factor = double(clipped.gradient_clip.clip_norm) / norm;
  for (size_t k = 0; k < g0.size(); ++k)
    for (size_t i = 0; i < g0[k].size(); ++i)
      EXPECT_NEAR(g1[k][i], g0[k][i] * factor, 1e-6);
}

TEST(OptimizerKnobs, ClipByValueAndByNormPerParameter) {
  OptimizerConfig cfg;
  cfg.type = "sgd";
  cfg.gradient_clip.kind = GradientClip::Kind::kByValue;
  cfg.gradient_clip.min = -0.01f;
  cfg.gradient_clip.max = 0.02f;
  ParamAttr by_norm;
  by_norm.gradient_clip.kind = GradientClip::Kind::kByNorm;
  by_norm.gradient_clip.clip_norm = 0.001f;
  Programs p;
  ProgramBuilder b(&p.main, &p.startup, 9);
  std::string loss = Mlp(&b, by_norm);
  auto g = Grads(&b, p, cfg, loss);
  double sq = 0;
  for (float v : g[0]) sq += double(v) * v;
  EXPECT_NEAR(std::sqrt(sq), 0.001, 1e-7);
  for (size_t k = 1; k < g.size(); ++k)
    for (float v : g[k]) {
      EXPECT_GE(v, -0.01f);
      EXPECT_LE(v, 0.02f);
    }
}

TEST(OptimizerKnobs, LearningRateVarAndParameterList) {
  Programs p;
  ProgramBuilder b(&p.main, &p.startup, 9);
  std::string loss = Mlp(&b);
  std::string lr =
      b.CreatePersistable("my_lr", Shape{1}, DataType::kFloat32, 0.5f);
  OptimizerConfig cfg;
  cfg.type = "sgd";
  cfg.learning_rate_var = lr;
  cfg.parameter_list = {"fc_1.w_0"};
  ParamGradList pairs = MakeOptimizer(cfg)->Minimize(&b, loss);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].first, "fc_1.w_0");
  for (const auto& op : p.main.blocks(0).ops())
    if (op.type() == "sgd") {
      EXPECT_EQ(OpInput(op, "LearningRate")[0], "my_lr");
    }
}

TEST(OptimizerKnobs, BadKnobsAreErrors) {
  Programs p;
  ProgramBuilder b(&p.main, &p.startup, 9);
  std::string loss = Mlp(&b);
  OptimizerConfig cfg;
  cfg.type = "sgd";
  cfg.gradient_clip.kind = GradientClip::Kind::kByGlobalNorm;
  cfg.gradient_clip.clip_norm = -1.0f;
  EXPECT_THROW(MakeOptimizer(cfg)->Minimize(&b, loss), Error);
  EXPECT_THROW(ParseRegularizationKind("l3", "test"), Error);
  EXPECT_THROW(ParseGradientClipKind("by_magic", "test"), Error);
}

}  // namespace
}  // namespace fluid
