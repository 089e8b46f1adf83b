#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>

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
  EXPECT_THROW(layers::Activation(&b, x, "swish"), Error);
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

TEST(ProgramBuilder, GroupedDilatedConvShapes) {
  Programs p;
  ProgramBuilder b(&p.main, &p.startup);
  std::string x = layers::Data(&b, "x", Shape{4, 11, 9});
  layers::Conv2dWindow w;
  w.filter_size = {3, 2};
  w.stride = {2, 1};
  w.padding = {1, 0};
  w.dilation = {2, 3};
  w.groups = 2;
  std::string y = layers::Conv2d(&b, x, 6, w);
  EXPECT_EQ(VarShape(GetVarDesc(p.main.blocks(0), "conv2d_0.w_0")),
            Shape({6, 2, 3, 2}));
  // (11 + 2 - 5) / 2 + 1 = 5, (9 - 4) / 1 + 1 = 6.
  EXPECT_EQ(VarShape(GetVarDesc(p.main.blocks(0), y)), Shape({-1, 6, 5, 6}));
  w.groups = 3;
  try {
    layers::Conv2d(&b, x, 6, w);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'groups'"), std::string::npos)
        << e.what();
  }
}

TEST(ProgramBuilder, ANameSharesOneParameter) {
  Programs p;
  ProgramBuilder b(&p.main, &p.startup);
  std::string x = layers::Data(&b, "x", Shape{4});
  ParamAttr shared;
  shared.name = "w";
  std::string h = layers::Fc(&b, x, 4, "", 1, shared);
  layers::Fc(&b, h, 4, "", 1, shared);
  EXPECT_EQ(b.parameters(),
            (std::vector<std::string>{"w", "fc_0.b_0", "fc_1.b_0"}));
  int inits = 0;
  for (const auto& op : p.startup.blocks(0).ops())
    inits += op.outputs(0).arguments(0) == "w";
  EXPECT_EQ(inits, 1);
  try {
    layers::Fc(&b, x, 5, "", 1, shared);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("layer 'fc': argument 'param_attr'"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("[4, 5]"), std::string::npos) << msg;
  }
}

TEST(Optimizer, ParameterLearningRateScalesItsOptimizeOp) {
  Programs p;
  ProgramBuilder b(&p.main, &p.startup);
  std::string x = layers::Data(&b, "x", Shape{4});
  ParamAttr slow, frozen;
  slow.learning_rate = 0.5f;
  frozen.trainable = false;
  std::string h = layers::Fc(&b, x, 3, "", 1, slow, frozen);
  std::string loss = layers::Mean(&b, layers::Fc(&b, h, 2));
  OptimizerConfig cfg;
  cfg.type = "sgd";
  cfg.learning_rate = 0.2f;
  ParamGradList pairs = MakeOptimizer(cfg)->Minimize(&b, loss);
  EXPECT_EQ(pairs.size(), 3u);  // not fc_0.b_0
  std::map<std::string, std::string> lr_of;
  for (const auto& op : p.main.blocks(0).ops())
    if (op.type() == "sgd")
      for (const auto& in : op.inputs())
        if (in.parameter() == "LearningRate")
          lr_of[OpRoleVarOf(op)[0]] = in.arguments(0);
  EXPECT_EQ(lr_of.count("fc_0.b_0"), 0u);
  EXPECT_NE(lr_of["fc_0.w_0"], lr_of["fc_1.w_0"]);
  EXPECT_EQ(lr_of["fc_1.w_0"], lr_of["fc_1.b_0"]);
  auto value_of = [&](const std::string& var) {
    for (const auto& op : p.startup.blocks(0).ops())
      if (op.outputs(0).arguments(0) == var)
        return GetOpAttrAs<float>(op, "value");
    return -1.0f;
  };
  EXPECT_FLOAT_EQ(value_of(lr_of["fc_0.w_0"]), 0.1f);
  EXPECT_FLOAT_EQ(value_of(lr_of["fc_1.w_0"]), 0.2f);
}

TEST(ProgramBuilder, SharedNameCountersKeepProgramsApart) {
  auto counters = std::make_shared<ProgramBuilder::NameCounters>();
  Programs a, c;
  ProgramBuilder ba(&a.main, &a.startup), bc(&c.main, &c.startup);
  ba.SetNameCounters(counters);
  bc.SetNameCounters(counters);
  layers::Fc(&ba, layers::Data(&ba, "x", Shape{4}), 3);
  layers::Fc(&bc, layers::Data(&bc, "x", Shape{4}), 3);
  EXPECT_NE(FindVarDesc(a.main.blocks(0), "fc_0.w_0"), nullptr);
  EXPECT_NE(FindVarDesc(c.main.blocks(0), "fc_1.w_0"), nullptr);
}

}  // namespace
}  // namespace fluid
