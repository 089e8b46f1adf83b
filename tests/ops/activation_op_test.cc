#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "src/framework/op_registry.h"
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

// ---- the activations with Fluid's attributes (activation_functors.h) ----

// One configuration of an activation: the attrs given to the op (empty: its
// defaults), the math written out, and an input range on which it is
// defined; inputs are moved off the kinks (where the derivative jumps).
struct AttrAct {
  std::string type;
  AttributeMap attrs;
  std::function<double(double)> f;
  std::function<double(double)> df;  // derivative, in terms of x
  double lo, hi;
  std::vector<double> kinks;
  bool grad_from_x;  // the grad op reads X (else Out)
};

double Sign(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }
double Clip(double x, double lo, double hi) {
  return std::min(std::max(x, lo), hi);
}

const std::vector<AttrAct>& AttrActs() {
  static const std::vector<AttrAct> acts = [] {
    const double a02 = double(0.02f), a01 = double(0.1f), a05 = double(0.5f);
    std::vector<AttrAct> v = {
        {"leaky_relu",
         {},
         [=](double x) { return x > 0 ? x : a02 * x; },
         [=](double x) { return x > 0 ? 1.0 : a02; },
         -3,
         3,
         {0.0},
         true},
        {"leaky_relu",
         {{"alpha", 0.1f}},
         [=](double x) { return x > 0 ? x : a01 * x; },
         [=](double x) { return x > 0 ? 1.0 : a01; },
         -3,
         3,
         {0.0},
         true},
        {"elu",
         {},
         [](double x) { return x > 0 ? x : std::exp(x) - 1; },
         [](double x) { return x > 0 ? 1.0 : std::exp(x); },
         -3,
         3,
         {0.0},
         true},
        {"elu",
         {{"alpha", 0.5f}},
         [=](double x) { return x > 0 ? x : a05 * (std::exp(x) - 1); },
         [=](double x) { return x > 0 ? 1.0 : a05 * std::exp(x); },
         -3,
         3,
         {0.0},
         true},
        {"relu6",
         {},
         [](double x) { return Clip(x, 0, 6); },
         [](double x) { return x > 0 && x < 6 ? 1.0 : 0.0; },
         -2,
         8,
         {0.0, 6.0},
         false},
        {"relu6",
         {{"threshold", 2.5f}},
         [](double x) { return Clip(x, 0, 2.5); },
         [](double x) { return x > 0 && x < 2.5 ? 1.0 : 0.0; },
         -2,
         4,
         {0.0, 2.5},
         false},
        {"brelu",
         {},
         [](double x) { return Clip(x, 0, 24); },
         [](double x) { return x > 0 && x < 24 ? 1.0 : 0.0; },
         -3,
         27,
         {0.0, 24.0},
         false},
        {"brelu",
         {{"t_min", -1.5f}, {"t_max", 2.0f}},
         [](double x) { return Clip(x, -1.5, 2); },
         [](double x) { return x > -1.5 && x < 2 ? 1.0 : 0.0; },
         -3,
         3,
         {-1.5, 2.0},
         false},
        {"exp",
         {},
         [](double x) { return std::exp(x); },
         [](double x) { return std::exp(x); },
         -3,
         3,
         {},
         false},
        {"log",
         {},
         [](double x) { return std::log(x); },
         [](double x) { return 1 / x; },
         0.2,
         5,
         {},
         true},
        {"sqrt",
         {},
         [](double x) { return std::sqrt(x); },
         [](double x) { return 0.5 / std::sqrt(x); },
         0.2,
         5,
         {},
         false},
        {"square",
         {},
         [](double x) { return x * x; },
         [](double x) { return 2 * x; },
         -3,
         3,
         {},
         true},
        {"abs",
         {},
         [](double x) { return std::fabs(x); },
         [](double x) { return Sign(x); },
         -3,
         3,
         {0.0},
         true},
        {"pow",
         {},
         [](double x) { return x; },
         [](double) { return 1.0; },
         -3,
         3,
         {},
         true},
        {"pow",
         {{"factor", 3.0f}},
         [](double x) { return x * x * x; },
         [](double x) { return 3 * x * x; },
         -2,
         2,
         {},
         true},
        {"pow",
         {{"factor", 0.5f}},
         [](double x) { return std::sqrt(x); },
         [](double x) { return 0.5 / std::sqrt(x); },
         0.2,
         5,
         {},
         true},
        {"softplus",
         {},
         [](double x) { return std::log(1 + std::exp(x)); },
         [](double x) { return 1 / (1 + std::exp(-x)); },
         -4,
         4,
         {},
         true},
        {"softsign",
         {},
         [](double x) { return x / (1 + std::fabs(x)); },
         [](double x) { return 1 / ((1 + std::fabs(x)) * (1 + std::fabs(x))); },
         -4,
         4,
         {},
         true},
    };
    return v;
  }();
  return acts;
}

std::string Describe(const AttrAct& a) {
  std::string s = a.type;
  for (const auto& kv : a.attrs)
    s += " " + kv.first + "=" + std::to_string(std::get<float>(kv.second));
  return s;
}

proto::OpDesc AttrOp(const AttrAct& a) {
  return MakeOp(a.type, {{"X", {"x"}}}, {{"Out", {"out"}}}, a.attrs);
}

// The grad op as the grad maker emits it, reading X or Out as bound here.
proto::OpDesc AttrGradOp(const AttrAct& a) {
  return MakeOp(a.type + "_grad",
                {{a.grad_from_x ? "X" : "Out", {"base"}}, {"Out@GRAD", {"g"}}},
                {{"X@GRAD", {"dx"}}}, a.attrs);
}

// Uniform in [lo, hi], each value at least 0.05 away from every kink.
Tensor AttrInput(const AttrAct& a, const Shape& s, uint64_t seed) {
  auto v = ToVector<double>(RandomTensor<double>(s, a.lo, a.hi, seed));
  for (double& x : v)
    for (double k : a.kinks)
      if (std::fabs(x - k) < 0.05) x = k + (x < k ? -0.05 : 0.05);
  return MakeTensor<double>(s, v);
}

void ExpectNearRel(double got, double want, double tol,
                   const std::string& what) {
  EXPECT_NEAR(got, want, tol * std::max(1.0, std::fabs(want))) << what;
}

TEST(ActivationOp, AttrActsForwardMatchesNaive) {
  for (const AttrAct& a : AttrActs()) {
    uint64_t seed = 40;
    for (const Shape& s : Shapes()) {
      Tensor x = AttrInput(a, s, seed++);
      Tensor out = RunOp(AttrOp(a), {{"x", x}})["out"];
      ASSERT_EQ(out.shape(), s) << Describe(a);
      auto xv = ToVector<double>(x);
      auto got = ToVector<double>(out);
      for (size_t i = 0; i < xv.size(); ++i)
        ExpectNearRel(got[i], a.f(xv[i]), 1e-14,
                      Describe(a) + " x=" + std::to_string(xv[i]));
    }
  }
}

TEST(ActivationOp, AttrActsGradOpMatchesNaiveDerivative) {
  for (const AttrAct& a : AttrActs()) {
    Tensor x = AttrInput(a, {40, 30}, 11);
    Tensor g = RandomTensor<double>({40, 30}, -1, 1, 12);
    Tensor out = RunOp(AttrOp(a), {{"x", x}})["out"];
    auto dx = ToVector<double>(RunOp(
        AttrGradOp(a), {{"base", a.grad_from_x ? x : out}, {"g", g}})["dx"]);
    auto xv = ToVector<double>(x);
    auto gv = ToVector<double>(g);
    for (size_t i = 0; i < xv.size(); ++i)
      ExpectNearRel(dx[i], gv[i] * a.df(xv[i]), 1e-13,
                    Describe(a) + " x=" + std::to_string(xv[i]));
  }
}

TEST(ActivationOp, AttrActsGradient) {
  for (const AttrAct& a : AttrActs()) {
    uint64_t seed = 60;
    for (const Shape& s : Shapes())
      EXPECT_TRUE(CheckGradient(AttrOp(a), {{"x", AttrInput(a, s, seed++)}}))
          << Describe(a) << " " << s;
  }
}

TEST(ActivationOp, AttrActsFloatMatchesDouble) {
  for (const AttrAct& a : AttrActs()) {
    Tensor xd = AttrInput(a, {9, 11}, 3);
    auto xv = ToVector<double>(xd);
    std::vector<float> xf(xv.begin(), xv.end());
    std::vector<double> xr(xf.begin(), xf.end());  // the float inputs
    auto d = ToVector<double>(
        RunOp(AttrOp(a), {{"x", MakeTensor<double>({9, 11}, xr)}})["out"]);
    auto f = ToVector<float>(
        RunOp(AttrOp(a), {{"x", MakeTensor<float>({9, 11}, xf)}})["out"]);
    ASSERT_EQ(d.size(), f.size());
    for (size_t i = 0; i < d.size(); ++i)
      ExpectNearRel(f[i], d[i], 2e-6, Describe(a));
  }
}

// The defaults are Fluid's: leaky_relu alpha 0.02, elu alpha 1, relu6
// threshold 6, brelu [0, 24], pow factor 1.
TEST(ActivationOp, FluidDefaults) {
  auto run = [](const std::string& type, std::vector<double> x) {
    Tensor t = MakeTensor<double>({int64_t(x.size())}, x);
    return ToVector<double>(RunOp(Op(type), {{"x", t}})["out"]);
  };
  EXPECT_EQ(run("leaky_relu", {-1.0, 2.0}),
            (std::vector<double>{-double(0.02f), 2.0}));
  EXPECT_EQ(run("elu", {-1.0, 2.0}),
            (std::vector<double>{std::expm1(-1.0), 2.0}));
  EXPECT_EQ(run("relu6", {-1.0, 3.0, 7.0}),
            (std::vector<double>{0.0, 3.0, 6.0}));
  EXPECT_EQ(run("brelu", {-1.0, 3.0, 30.0}),
            (std::vector<double>{0.0, 3.0, 24.0}));
  EXPECT_EQ(run("pow", {-1.5, 2.0}), (std::vector<double>{-1.5, 2.0}));
}

// As PyTorch gives: NaN outside the domain, infinities at its edge, no
// overflow in softplus, exact limits in softsign.
TEST(ActivationOp, AttrActsEdgeCases) {
  auto run = [](const proto::OpDesc& op, std::vector<double> x) {
    Tensor t = MakeTensor<double>({int64_t(x.size())}, x);
    return ToVector<double>(RunOp(op, {{"x", t}})["out"]);
  };
  auto lg = run(Op("log"), {-1.0, 0.0, 1.0});
  EXPECT_TRUE(std::isnan(lg[0]));
  EXPECT_EQ(lg[1], -HUGE_VAL);
  EXPECT_EQ(lg[2], 0.0);
  auto sq = run(Op("sqrt"), {-1.0, 0.0, 4.0});
  EXPECT_TRUE(std::isnan(sq[0]));
  EXPECT_EQ(sq[1], 0.0);
  EXPECT_EQ(sq[2], 2.0);
  auto half =
      MakeOp("pow", {{"X", {"x"}}}, {{"Out", {"out"}}}, {{"factor", 0.5f}});
  auto pw = run(half, {-4.0, 4.0});
  EXPECT_TRUE(std::isnan(pw[0]));
  EXPECT_EQ(pw[1], 2.0);
  auto sp = run(Op("softplus"), {-800.0, 0.0, 800.0});
  EXPECT_EQ(sp[0], 0.0);
  EXPECT_DOUBLE_EQ(sp[1], std::log(2.0));
  EXPECT_EQ(sp[2], 800.0);
  auto ex = run(Op("exp"), {-800.0, 800.0});
  EXPECT_EQ(ex[0], 0.0);
  EXPECT_EQ(ex[1], HUGE_VAL);
  auto ss = run(Op("softsign"), {-1e300, 1e300});
  EXPECT_EQ(ss[0], -1.0);
  EXPECT_EQ(ss[1], 1.0);
  EXPECT_EQ(run(Op("abs"), {-2.5, 0.0, 3.0}),
            (std::vector<double>{2.5, 0.0, 3.0}));
  // The sign of abs's gradient, 0 at 0 (PyTorch's sign(0)).
  auto grad = MakeOp("abs_grad", {{"X", {"x"}}, {"Out@GRAD", {"g"}}},
                     {{"X@GRAD", {"dx"}}});
  auto dx = ToVector<double>(
      RunOp(grad, {{"x", MakeTensor<double>({3}, {-2.0, 0.0, 3.0})},
                   {"g", MakeTensor<double>({3}, {5.0, 5.0, 5.0})}})["dx"]);
  EXPECT_EQ(dx, (std::vector<double>{-5.0, 0.0, 5.0}));
}

// The grad maker binds X or Out, as each gradient needs.
TEST(ActivationOp, AttrActsGradOpReadsWhatItNeeds) {
  for (const AttrAct& a : AttrActs()) {
    auto grads = OpRegistry::Global().Get(a.type).grad_maker()(AttrOp(a));
    ASSERT_EQ(grads.size(), 1u) << a.type;
    const proto::OpDesc& g = grads[0];
    EXPECT_EQ(g.type(), a.type + "_grad");
    std::vector<std::string> slots;
    for (const auto& in : g.inputs()) slots.push_back(in.parameter());
    std::sort(slots.begin(), slots.end());
    std::vector<std::string> want = {"Out@GRAD", a.grad_from_x ? "X" : "Out"};
    std::sort(want.begin(), want.end());
    EXPECT_EQ(slots, want) << a.type;
  }
}

TEST(ActivationOp, AttrActsCompileTimeUnknownBatch) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "h", DataType::kFloat32, Shape({-1, 64}));
  for (const AttrAct& a : AttrActs()) {
    std::string out = a.type + "_out";
    InferShapeAtCompileTime(
        MakeOp(a.type, {{"X", {"h"}}}, {{"Out", {out}}}, a.attrs), block);
    EXPECT_EQ(VarShape(*FindVarDesc(*block, out)), Shape({-1, 64})) << a.type;
  }
}

TEST(ActivationOp, AttrActsGradShapeMismatchNamesVars) {
  for (const AttrAct& a : AttrActs()) {
    auto grad = MakeOp(
        a.type + "_grad",
        {{a.grad_from_x ? "X" : "Out", {"act_in"}}, {"Out@GRAD", {"act_grad"}}},
        {{"X@GRAD", {"dx"}}}, a.attrs);
    try {
      RunOp(grad, {{"act_in", RandomTensor<double>({2, 3}, 1, 2, 1)},
                   {"act_grad", RandomTensor<double>({3, 2}, -1, 1, 1)}});
      FAIL() << "expected an error for " << a.type;
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("act_in"), std::string::npos) << msg;
      EXPECT_NE(msg.find("act_grad"), std::string::npos) << msg;
      EXPECT_NE(msg.find("[3, 2]"), std::string::npos) << msg;
    }
  }
}

}  // namespace
}  // namespace fluid
