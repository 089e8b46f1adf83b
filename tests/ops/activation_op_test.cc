#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

struct Act {
  std::string type;
  std::function<double(double)> f;
  std::function<double(double)> df;  // derivative, in terms of x
};

const std::vector<Act>& Acts() {
  static const std::vector<Act> acts = {
      {"relu", [](double x) { return x > 0 ? x : 0.0; },
       [](double x) { return x > 0 ? 1.0 : 0.0; }},
      {"sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); },
       [](double x) {
         const double s = 1.0 / (1.0 + std::exp(-x));
         return s * (1 - s);
       }},
      {"tanh", [](double x) { return std::tanh(x); },
       [](double x) { return 1 - std::tanh(x) * std::tanh(x); }},
  };
  return acts;
}

proto::OpDesc Op(const std::string& type) {
  return MakeOp(type, {{"X", {"x"}}}, {{"Out", {"out"}}});
}

const std::vector<Shape>& Shapes() {
  static const std::vector<Shape> shapes = {Shape({1}), Shape({7}),
                                            Shape({3, 5}), Shape({2, 1, 3})};
  return shapes;
}

TEST(ActivationOp, ForwardMatchesNaive) {
  for (const Act& a : Acts()) {
    uint64_t seed = 1;
    for (const Shape& s : Shapes()) {
      Tensor x = RandomTensor<double>(s, -4, 4, seed++);
      Tensor out = RunOp(Op(a.type), {{"x", x}})["out"];
      ASSERT_EQ(out.shape(), s);
      auto xv = ToVector<double>(x);
      auto got = ToVector<double>(out);
      for (size_t i = 0; i < xv.size(); ++i)
        ASSERT_NEAR(got[i], a.f(xv[i]), 1e-14) << a.type << " x=" << xv[i];
    }
  }
}

// Saturated inputs give exact limits, never NaN or inf.
TEST(ActivationOp, ExtremeInputs) {
  Tensor x = MakeTensor<double>({4}, {-800.0, -40.0, 40.0, 800.0});
  auto sig = ToVector<double>(RunOp(Op("sigmoid"), {{"x", x}})["out"]);
  EXPECT_NEAR(sig[0], 0.0, 1e-300);
  EXPECT_NEAR(sig[1], std::exp(-40.0), 1e-25);
  EXPECT_EQ(sig[2], 1.0);
  EXPECT_EQ(sig[3], 1.0);
  auto th = ToVector<double>(RunOp(Op("tanh"), {{"x", x}})["out"]);
  EXPECT_EQ(th[0], -1.0);
  EXPECT_EQ(th[3], 1.0);
  auto re = ToVector<double>(RunOp(Op("relu"), {{"x", x}})["out"]);
  EXPECT_EQ(re, (std::vector<double>{0.0, 0.0, 40.0, 800.0}));
}

TEST(ActivationOp, ThreadedMatchesNaive) {
  for (const Act& a : Acts()) {
    Tensor x = RandomTensor<double>({256, 300}, -3, 3, 7);
    Tensor g = RandomTensor<double>({256, 300}, -1, 1, 8);
    Tensor out = RunOp(Op(a.type), {{"x", x}}, 4)["out"];
    auto xv = ToVector<double>(x);
    auto ov = ToVector<double>(out);
    for (size_t i = 0; i < xv.size(); ++i)
      ASSERT_NEAR(ov[i], a.f(xv[i]), 1e-14) << a.type << " at " << i;
    auto grad = MakeOp(a.type + "_grad", {{"Out", {"y"}}, {"Out@GRAD", {"g"}}},
                       {{"X@GRAD", {"dx"}}});
    auto dx = ToVector<double>(RunOp(grad, {{"y", out}, {"g", g}}, 4)["dx"]);
    auto gv = ToVector<double>(g);
    for (size_t i = 0; i < xv.size(); ++i)
      ASSERT_NEAR(dx[i], gv[i] * a.df(xv[i]), 1e-14) << a.type << " at " << i;
  }
}

TEST(ActivationOp, FloatMatchesDouble) {
  for (const Act& a : Acts()) {
    auto d = ToVector<double>(RunOp(
        Op(a.type), {{"x", RandomTensor<double>({9, 11}, -5, 5, 3)}})["out"]);
    auto f = ToVector<float>(RunOp(
        Op(a.type), {{"x", RandomTensor<float>({9, 11}, -5, 5, 3)}})["out"]);
    ASSERT_EQ(d.size(), f.size());
    for (size_t i = 0; i < d.size(); ++i)
      EXPECT_NEAR(f[i], d[i], 2e-6) << a.type;
  }
}

TEST(ActivationOp, Gradient) {
  for (const Act& a : Acts()) {
    testing::GradCheckOptions opt;
    if (a.type == "relu") {
      opt.kink = 0.0;
      opt.kink_range = 1e-3;  // relu has no derivative at 0
    }
    uint64_t seed = 20;
    for (const Shape& s : Shapes())
      EXPECT_TRUE(CheckGradient(
          Op(a.type), {{"x", RandomTensor<double>(s, -2, 2, seed++)}}, opt))
          << a.type << " " << s;
  }
}

TEST(ActivationOp, ReluGradientAwayFromKink) {
  // Values well away from 0 on both sides; no element is skipped.
  Tensor x = MakeTensor<double>({2, 3}, {-1.5, 0.5, -0.25, 2.0, 0.75, -3.0});
  EXPECT_TRUE(CheckGradient(Op("relu"), {{"x", x}}));
}

TEST(ActivationOp, CompileTimeUnknownBatch) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "h", DataType::kFloat32, Shape({-1, 64}));
  for (const Act& a : Acts()) {
    std::string out = a.type + "_out";
    InferShapeAtCompileTime(MakeOp(a.type, {{"X", {"h"}}}, {{"Out", {out}}}),
                            block);
    EXPECT_EQ(VarShape(*FindVarDesc(*block, out)), Shape({-1, 64})) << a.type;
  }
}

TEST(ActivationOp, GradShapeMismatchNamesVars) {
  for (const Act& a : Acts()) {
    auto grad = MakeOp(a.type + "_grad",
                       {{"Out", {"act_out"}}, {"Out@GRAD", {"act_grad"}}},
                       {{"X@GRAD", {"dx"}}});
    try {
      RunOp(grad, {{"act_out", RandomTensor<double>({2, 3}, -1, 1, 1)},
                   {"act_grad", RandomTensor<double>({3, 2}, -1, 1, 1)}});
      FAIL() << "expected an error for " << a.type;
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("act_out"), std::string::npos) << msg;
      EXPECT_NE(msg.find("act_grad"), std::string::npos) << msg;
      EXPECT_NE(msg.find("[3, 2]"), std::string::npos) << msg;
    }
  }
}

}  // namespace
}  // namespace fluid
