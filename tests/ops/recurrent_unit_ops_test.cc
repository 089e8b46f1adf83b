// lstm_unit and gru_unit (one step on dense rows) against naive per-element
// formulas, their gradients by the numeric checker in float64, and their
// errors on bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::GradCheckOptions;
using testing::RandomTensor;
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;

constexpr int64_t kN = 4, kD = 3;

double Sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

proto::OpDesc LstmUnit(float forget_bias) {
  return MakeOp("lstm_unit", {{"X", {"x"}}, {"C_prev", {"c_prev"}}},
                {{"C", {"c"}}, {"H", {"h"}}}, {{"forget_bias", forget_bias}});
}

TensorMap LstmUnitInputs(uint64_t seed) {
  return {{"x", RandomTensor<double>({kN, 4 * kD}, -2, 2, seed)},
          {"c_prev", RandomTensor<double>({kN, kD}, -1, 1, seed + 1)}};
}

TEST(LstmUnitOp, MatchesFluidsFormulas) {
  const float forget_bias = 0.5f;
  const TensorMap in = LstmUnitInputs(1);
  TensorMap out = RunOp(LstmUnit(forget_bias), in);
  const auto x = ToVector<double>(in.at("x"));
  const auto cp = ToVector<double>(in.at("c_prev"));
  const auto c = ToVector<double>(out["c"]), h = ToVector<double>(out["h"]);
  for (int64_t k = 0; k < kN; ++k)
    for (int64_t j = 0; j < kD; ++j) {
      const double* g = x.data() + k * 4 * kD + j;  // blocks i, f, o, j
      const double want_c = Sigmoid(g[kD] + forget_bias) * cp[k * kD + j] +
                            Sigmoid(g[0]) * std::tanh(g[3 * kD]);
      EXPECT_NEAR(c[k * kD + j], want_c, 1e-14);
      EXPECT_NEAR(h[k * kD + j], Sigmoid(g[2 * kD]) * std::tanh(want_c), 1e-14);
    }
}

TEST(LstmUnitOp, Gradients) {
  EXPECT_TRUE(CheckGradient(LstmUnit(0.0f), LstmUnitInputs(10)));
  GradCheckOptions o;
  o.of = {"h"};
  EXPECT_TRUE(CheckGradient(LstmUnit(1.0f), LstmUnitInputs(20), o));
}

TEST(LstmUnitOp, XNotFourTimesCPrevIsAnError) {
  TensorMap in = LstmUnitInputs(3);
  in["x"] = RandomTensor<double>({kN, 3 * kD}, -1, 1, 4);
  const std::string err = ErrorOf(LstmUnit(0.0f), in);
  EXPECT_NE(err.find("X 'x'"), std::string::npos) << err;
  EXPECT_NE(err.find("[4, 12]"), std::string::npos) << err;
}

proto::OpDesc GruUnit(bool bias, bool origin, int act = 2) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"Input", {"x"}}, {"HiddenPrev", {"h_prev"}}, {"Weight", {"w"}}};
  if (bias) in.push_back({"Bias", {"b"}});
  return MakeOp("gru_unit", in,
                {{"Gate", {"gate"}},
                 {"ResetHiddenPrev", {"reset"}},
                 {"Hidden", {"hidden"}}},
                {{"origin_mode", origin}, {"activation", int32_t{act}}});
}

TensorMap GruUnitInputs(bool bias, uint64_t seed) {
  TensorMap in{{"x", RandomTensor<double>({kN, 3 * kD}, -1, 1, seed)},
               {"h_prev", RandomTensor<double>({kN, kD}, -1, 1, seed + 1)},
               {"w", RandomTensor<double>({kD, 3 * kD}, -1, 1, seed + 2)}};
  if (bias) in["b"] = RandomTensor<double>({1, 3 * kD}, -1, 1, seed + 3);
  return in;
}

TEST(GruUnitOp, MatchesFluidsFormulas) {
  for (bool origin : {false, true}) {
    const TensorMap in = GruUnitInputs(true, 30);
    TensorMap out = RunOp(GruUnit(true, origin), in);
    const auto x = ToVector<double>(in.at("x"));
    const auto hp = ToVector<double>(in.at("h_prev"));
    const auto w = ToVector<double>(in.at("w"));
    const auto b = ToVector<double>(in.at("b"));
    const auto got = ToVector<double>(out["hidden"]);
    for (int64_t k = 0; k < kN; ++k) {
      std::vector<double> u(kD), rh(kD);
      for (int64_t j = 0; j < kD; ++j) {
        double gu = x[k * 3 * kD + j] + b[j];
        double gr = x[k * 3 * kD + kD + j] + b[kD + j];
        for (int64_t m = 0; m < kD; ++m) {
          gu += hp[k * kD + m] * w[m * 2 * kD + j];
          gr += hp[k * kD + m] * w[m * 2 * kD + kD + j];
        }
        u[j] = Sigmoid(gu);
        rh[j] = Sigmoid(gr) * hp[k * kD + j];
      }
      for (int64_t j = 0; j < kD; ++j) {
        double gc = x[k * 3 * kD + 2 * kD + j] + b[2 * kD + j];
        for (int64_t m = 0; m < kD; ++m)
          gc += rh[m] * w[2 * kD * kD + m * kD + j];
        const double c = std::tanh(gc), h = hp[k * kD + j];
        const double want =
            origin ? u[j] * h + (1 - u[j]) * c : (1 - u[j]) * h + u[j] * c;
        EXPECT_NEAR(got[k * kD + j], want, 1e-14) << "origin " << origin;
      }
    }
  }
}

TEST(GruUnitOp, Gradients) {
  GradCheckOptions o;
  o.of = {"hidden"};
  uint64_t seed = 40;
  for (bool bias : {true, false})
    for (bool origin : {false, true})
      EXPECT_TRUE(CheckGradient(GruUnit(bias, origin, origin ? 0 : 2),
                                GruUnitInputs(bias, seed += 10), o))
          << "bias " << bias << " origin " << origin;
}

TEST(GruUnitOp, BadInputIsAnError) {
  std::string err = ErrorOf(GruUnit(false, false, 7), GruUnitInputs(false, 5));
  EXPECT_NE(err.find("attr 'activation' is 7"), std::string::npos) << err;
  TensorMap in = GruUnitInputs(false, 5);
  in["w"] = RandomTensor<double>({kD, 4 * kD}, -1, 1, 6);
  err = ErrorOf(GruUnit(false, false), in);
  EXPECT_NE(err.find("Weight 'w'"), std::string::npos) << err;
}

}  // namespace
}  // namespace fluid
