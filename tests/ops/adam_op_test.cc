#include <gtest/gtest.h>

#include <cmath>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/optimizer_ops.h"

namespace fluid {
namespace {

using testing::RunSteps;

using testing::AdamOp;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;

// torch.optim.Adam / AdamW (amsgrad off), step by step as torch writes it,
// with the step count t and bias corrections from pow().
std::vector<double> TorchAdam(std::vector<double> p,
                              const std::vector<std::vector<double>>& gs,
                              double lr, double b1, double b2, double eps,
                              double wd, bool decoupled) {
  std::vector<double> m(p.size(), 0.0), v(p.size(), 0.0);
  int t = 0;
  for (const auto& grad : gs) {
    ++t;
    std::vector<double> g = grad;
    if (decoupled) {
      for (double& x : p) x *= 1 - lr * wd;
    } else if (wd != 0) {
      for (size_t i = 0; i < p.size(); ++i) g[i] += wd * p[i];
    }
    for (size_t i = 0; i < p.size(); ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    }
    double bc1 = 1 - std::pow(b1, t);
    double bc2 = 1 - std::pow(b2, t);
    double step_size = lr / bc1;
    for (size_t i = 0; i < p.size(); ++i) {
      double denom = std::sqrt(v[i]) / std::sqrt(bc2) + eps;
      p[i] -= step_size * m[i] / denom;
    }
  }
  return p;
}

TensorMap InitialState(bool fp64, const Shape& shape, float beta1,
                       float beta2) {
  const int64_t n = shape.numel();
  if (fp64) {
    return {{"p", RandomTensor<double>(shape, -1, 1, 5)},
            {"m1", MakeTensor<double>(shape, std::vector<double>(n, 0))},
            {"m2", MakeTensor<double>(shape, std::vector<double>(n, 0))},
            {"lr", MakeTensor<double>({1}, {0.01})},
            {"b1p", MakeTensor<double>({1}, {beta1})},
            {"b2p", MakeTensor<double>({1}, {beta2})}};
  }
  return {{"p", RandomTensor<float>(shape, -1, 1, 5)},
          {"m1", MakeTensor<float>(shape, std::vector<float>(n, 0))},
          {"m2", MakeTensor<float>(shape, std::vector<float>(n, 0))},
          {"lr", MakeTensor<float>({1}, {0.01f})},
          {"b1p", MakeTensor<float>({1}, {beta1})},
          {"b2p", MakeTensor<float>({1}, {beta2})}};
}

struct Case {
  float beta1, beta2, eps, wd;
  bool decoupled;
};

TEST(AdamOp, InPlaceStepsMatchTorch) {
  const Shape shape{4, 6};
  const int steps = 8;
  std::vector<std::vector<double>> gref;
  std::vector<Tensor> grads;
  for (int s = 0; s < steps; ++s) {
    // Gradients spanning several orders of magnitude exercise the sqrt(v)
    // denominator against epsilon.
    Tensor g = RandomTensor<double>(shape, -1, 1, 300 + s);
    for (int64_t i = 0; i < g.numel(); ++i)
      g.data<double>()[i] *= std::pow(10.0, double(i % 5) - 3);
    grads.push_back(g);
    gref.push_back(ToVector<double>(g));
  }
  for (Case c : {Case{0.9f, 0.999f, 1e-8f, 0.0f, false},
                 Case{0.9f, 0.999f, 1e-8f, 0.01f, false},
                 Case{0.8f, 0.99f, 1e-6f, 0.1f, true},
                 Case{0.9f, 0.999f, 1e-8f, 0.0f, true}}) {
    SCOPED_TRACE(::testing::Message() << "beta1 " << c.beta1 << " wd " << c.wd
                                      << " decoupled " << c.decoupled);
    TensorMap init = InitialState(true, shape, c.beta1, c.beta2);
    auto state = RunSteps(AdamOp({{"beta1", c.beta1},
                                  {"beta2", c.beta2},
                                  {"epsilon", c.eps},
                                  {"weight_decay", c.wd},
                                  {"decoupled_weight_decay", c.decoupled}}),
                          init, "g", grads);
    auto want = TorchAdam(ToVector<double>(init["p"]), gref, 0.01, c.beta1,
                          c.beta2, c.eps, c.wd, c.decoupled);
    auto got = ToVector<double>(state["p"]);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-12 * std::max(1.0, std::abs(want[i])))
          << "element " << i;
    // The powers have advanced to beta^(steps + 1), ready for the next step.
    EXPECT_NEAR(state["b1p"].data<double>()[0],
                std::pow(double(c.beta1), steps + 1), 1e-14);
    EXPECT_NEAR(state["b2p"].data<double>()[0],
                std::pow(double(c.beta2), steps + 1), 1e-14);
  }
}

TEST(AdamOp, DecayModesDiffer) {
  // With the same weight decay, L2 (Adam) and decoupled (AdamW) updates
  // differ; a cheap check that the attr is honoured.
  const Shape shape{10};
  std::vector<Tensor> grads = {RandomTensor<double>(shape, -1, 1, 1)};
  TensorMap init = InitialState(true, shape, 0.9f, 0.999f);
  auto l2 = RunSteps(AdamOp({{"weight_decay", 0.5f}}), init, "g", grads);
  auto dec = RunSteps(
      AdamOp({{"weight_decay", 0.5f}, {"decoupled_weight_decay", true}}), init,
      "g", grads);
  auto a = ToVector<double>(l2["p"]), b = ToVector<double>(dec["p"]);
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff += std::abs(a[i] - b[i]);
  EXPECT_GT(diff, 1e-4);
}

TEST(AdamOp, Float32MatchesFloat64) {
  const Shape shape{3, 11};
  const int steps = 5;
  std::vector<Tensor> gd, gf;
  for (int s = 0; s < steps; ++s) {
    gd.push_back(RandomTensor<double>(shape, -1, 1, 400 + s));
    gf.push_back(RandomTensor<float>(shape, -1, 1, 400 + s));
  }
  AttributeMap attrs = {{"weight_decay", 0.01f}};
  auto d =
      RunSteps(AdamOp(attrs), InitialState(true, shape, 0.9f, 0.999f), "g", gd);
  auto f = RunSteps(AdamOp(attrs), InitialState(false, shape, 0.9f, 0.999f),
                    "g", gf);
  auto pd = ToVector<double>(d["p"]);
  auto pf = ToVector<float>(f["p"]);
  for (size_t i = 0; i < pd.size(); ++i) EXPECT_NEAR(pf[i], pd[i], 2e-6);
  EXPECT_NEAR(f["b1p"].data<float>()[0], std::pow(0.9, steps + 1), 1e-6);
  EXPECT_EQ(f["b1p"].dtype(), DataType::kFloat32);
}

TEST(AdamOp, SeparateOutputsLeaveInputsAlone) {
  const Shape shape{8};
  TensorMap in = InitialState(true, shape, 0.9f, 0.999f);
  in["g"] = RandomTensor<double>(shape, -1, 1, 77);
  auto out = RunOp(AdamOp({}, "_out"), in);
  auto want = TorchAdam(ToVector<double>(in["p"]), {ToVector<double>(in["g"])},
                        0.01, 0.9f, 0.999f, 1e-8f, 0, false);
  auto got = ToVector<double>(out["p_out"]);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-14);
  EXPECT_NEAR(out["b1p_out"].data<double>()[0], double(0.9f) * double(0.9f),
              1e-16);
  // The first step of Adam moves every element by about lr.
  auto p0 = ToVector<double>(in["p"]);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(std::abs(got[i] - p0[i]), 0.01, 1e-6);
}

TEST(AdamOp, MomentShapeMismatchNamesVar) {
  TensorMap in = InitialState(true, {2, 3}, 0.9f, 0.999f);
  in["g"] = RandomTensor<double>({2, 3}, -1, 1, 1);
  in["m2"] = RandomTensor<double>({6}, -1, 1, 1);
  try {
    RunOp(AdamOp({}), in);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("Moment2 'm2'"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fluid
