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

std::vector<std::string> OpTypes(const proto::ProgramDesc& p) {
  std::vector<std::string> t;
  for (const auto& op : p.blocks(0).ops()) t.push_back(op.type());
  return t;
}

TEST(ProgramBuilder, FcDeclaresParametersAndInitOps) {
  Programs p;
  ProgramBuilder b(&p.main, &p.startup, 7);
  std::string x = layers::Data(&b, "x", Shape{3, 4});
  std::string y = layers::Fc(&b, x, 5, "relu");
  EXPECT_EQ(OpTypes(p.main),
            (std::vector<std::string>{"mul", "elementwise_add", "relu"}));
  EXPECT_EQ(OpTypes(p.startup),
            (std::vector<std::string>{"uniform_random", "uniform_random"}));
  const proto::VarDesc& w = GetVarDesc(p.main.blocks(0), "fc_0.w_0");
  EXPECT_EQ(VarShape(w), Shape({12, 5}));
  EXPECT_TRUE(w.persistable());
  EXPECT_TRUE(w.trainable());
  EXPECT_EQ(VarShape(GetVarDesc(p.main.blocks(0), y)), Shape({-1, 5}));
  EXPECT_TRUE(GetVarDesc(p.main.blocks(0), x).stop_gradient());
  // PyTorch's default bounds: 1/sqrt(fan_in) for weight and bias.
  const auto& init = p.startup.blocks(0).ops(0);
  EXPECT_FLOAT_EQ(GetOpAttrAs<float>(init, "max"), 1.0f / std::sqrt(12.0f));
  for (const auto& op : p.main.blocks(0).ops()) EXPECT_EQ(OpRoleOf(op), 0);
}

TEST(ProgramBuilder, SeedsMakeStartupReproducible) {
  Programs a, b, c;
  for (auto* pr : {&a, &b}) {
    ProgramBuilder builder(&pr->main, &pr->startup, 42);
    layers::Fc(&builder, layers::Data(&builder, "x", Shape{4}), 3);
  }
  ProgramBuilder other(&c.main, &c.startup, 43);
  layers::Fc(&other, layers::Data(&other, "x", Shape{4}), 3);
  EXPECT_EQ(a.startup.SerializeAsString(), b.startup.SerializeAsString());
  EXPECT_NE(a.startup.SerializeAsString(), c.startup.SerializeAsString());
  // Two random initialisers in one program get different seeds.
  EXPECT_NE(GetOpAttrAs<int32_t>(a.startup.blocks(0).ops(0), "seed"),
            GetOpAttrAs<int32_t>(a.startup.blocks(0).ops(1), "seed"));
}

TEST(ProgramBuilder, StartupInitialisesWithinBounds) {
  Programs p;
  ProgramBuilder b(&p.main, &p.startup, 3);
  layers::Fc(&b, layers::Data(&b, "x", Shape{100}), 50);
  Executor exe;
  Scope scope;
  exe.RunOnce(p.startup, &scope);
  const Tensor& w = scope.GetVar("fc_0.w_0")->GetTensor();
  ASSERT_EQ(w.shape(), Shape({100, 50}));
  float bound = 0.1f;
  double sum_sq = 0;
  for (int64_t i = 0; i < w.numel(); ++i) {
    float v = w.data<float>()[i];
    ASSERT_LE(std::fabs(v), bound);
    sum_sq += v * v;
  }
  // Uniform(-b, b) has variance b^2/3.
  EXPECT_NEAR(sum_sq / w.numel(), bound * bound / 3, 0.1 * bound * bound / 3);
}

TEST(ProgramBuilder, ShapeErrorsSurfaceWhileBuilding) {
  Programs p;
  ProgramBuilder b(&p.main, &p.startup);
  std::string x = layers::Data(&b, "x", Shape{4});
  EXPECT_THROW(layers::Activation(&b, x, "gelu"), Error);
  EXPECT_THROW(layers::Conv2d(&b, x, 4, 3), Error);  // not NCHW
}

TEST(Optimizer, MinimizeAppendsBackwardThenOneOptimizeOpPerParam) {
  for (std::string type : {"sgd", "momentum", "adam"}) {
    Programs p;
    ProgramBuilder b(&p.main, &p.startup);
    std::string x = layers::Data(&b, "x", Shape{4});
    std::string label = layers::Data(&b, "label", Shape{1}, DataType::kInt64);
    std::string logits = layers::Fc(&b, layers::Fc(&b, x, 8, "tanh"), 3);
    std::string loss =
        layers::Mean(&b, layers::SoftmaxWithCrossEntropy(&b, logits, label));
    OptimizerConfig cfg;
    cfg.type = type;
    ParamGradList pairs = MakeOptimizer(cfg)->Minimize(&b, loss);
    ASSERT_EQ(pairs.size(), 4u) << type;
    int optimize_ops = 0;
    bool seen_optimize = false;
    for (const auto& op : p.main.blocks(0).ops()) {
      bool is_opt = OpRoleOf(op) == static_cast<int>(OpRole::kOptimize);
      if (is_opt) {
        ++optimize_ops;
        EXPECT_EQ(op.type(), type);
        auto rv = OpRoleVarOf(op);
        ASSERT_EQ(rv.size(), 2u);
        EXPECT_EQ(rv[1], GradVarName(rv[0]));
      }
      EXPECT_FALSE(seen_optimize && !is_opt) << "optimize ops come last";
      seen_optimize = seen_optimize || is_opt;
    }
    EXPECT_EQ(optimize_ops, 4) << type;

    // One SGD-family step on real data runs and changes the parameters.
    Executor exe;
    Scope scope;
    exe.RunOnce(p.startup, &scope);
    Tensor before;
    before.CopyFrom(scope.GetVar("fc_0.w_0")->GetTensor());
    Tensor xs, ls;
    float* xp = xs.mutable_data<float>(Shape{2, 4});
    for (int i = 0; i < 8; ++i) xp[i] = 0.1f * i;
    int64_t* lp = ls.mutable_data<int64_t>(Shape{2, 1});
    lp[0] = 0;
    lp[1] = 2;
    exe.RunOnce(p.main, &scope, {{"x", xs}, {"label", ls}});
    const Tensor& after = scope.GetVar("fc_0.w_0")->GetTensor();
    double diff = 0;
    for (int64_t i = 0; i < after.numel(); ++i)
      diff += std::fabs(after.data<float>()[i] - before.data<float>()[i]);
    EXPECT_GT(diff, 0) << type;
  }
}

TEST(Optimizer, UnknownTypeIsAnError) {
  OptimizerConfig cfg;
  cfg.type = "lbfgs";
  EXPECT_THROW(MakeOptimizer(cfg), Error);
}

}  // namespace
}  // namespace fluid
