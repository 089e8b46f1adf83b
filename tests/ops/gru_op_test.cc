// gru against a naive loop over each sequence's rows (Fluid's gate layout
// {u, r, c} and weight layout W_ur then W_c, both origin modes, forward and
// reverse, with and without H0 and Bias), its gradients (Input, Weight,
// Bias, H0) by the numeric checker in float64 through sequences of
// different lengths (length 1 included), and its errors on bad input.
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

const LoD kLoD{0, 2, 6, 7, 10};  // lengths 2, 4, 1, 3
constexpr int64_t kD = 3;

struct Config {
  bool origin, reverse, state, bias;
};

proto::OpDesc Gru(const Config& c, const std::string& act = "tanh") {
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"Input", {"x"}}, {"Weight", {"w"}}};
  if (c.state) in.push_back({"H0", {"h0"}});
  if (c.bias) in.push_back({"Bias", {"b"}});
  return MakeOp("gru", in,
                {{"Hidden", {"hidden"}},
                 {"BatchGate", {"gate"}},
                 {"BatchResetHiddenPrev", {"reset"}},
                 {"BatchHidden", {"batch_hidden"}}},
                {{"origin_mode", c.origin},
                 {"is_reverse", c.reverse},
                 {"activation", act}});
}

TensorMap Inputs(const Config& c, uint64_t seed, const LoD& lod = kLoD) {
  const int64_t n = static_cast<int64_t>(lod.size()) - 1;
  TensorMap in{{"x", RandomTensor<double>({lod.back(), 3 * kD}, -1, 1, seed)},
               {"w", RandomTensor<double>({kD, 3 * kD}, -0.8, 0.8, seed + 1)}};
  in["x"].set_lod(lod);
  if (c.state) in["h0"] = RandomTensor<double>({n, kD}, -1, 1, seed + 2);
  if (c.bias) in["b"] = RandomTensor<double>({1, 3 * kD}, -0.5, 0.5, seed + 3);
  return in;
}

double Sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

// Hidden of every row, one sequence and one row at a time.
std::vector<double> NaiveGru(const Config& c, const TensorMap& in) {
  const auto x = ToVector<double>(in.at("x")), w = ToVector<double>(in.at("w"));
  const int64_t d = kD;
  const double* w_ur = w.data();             // [D, 2D]
  const double* w_c = w.data() + 2 * d * d;  // [D, D]
  std::vector<double> hidden(kLoD.back() * d);
  for (size_t s = 0; s + 1 < kLoD.size(); ++s) {
    std::vector<double> h(d, 0);
    if (c.state)
      for (int64_t j = 0; j < d; ++j)
        h[j] = ToVector<double>(in.at("h0"))[s * d + j];
    const int64_t len = kLoD[s + 1] - kLoD[s];
    for (int64_t t = 0; t < len; ++t) {
      const int64_t r = kLoD[s] + (c.reverse ? len - 1 - t : t);
      std::vector<double> g(3 * d), u(d), rh(d);
      for (int64_t m = 0; m < 3 * d; ++m)
        g[m] =
            x[r * 3 * d + m] + (c.bias ? ToVector<double>(in.at("b"))[m] : 0.0);
      for (int64_t j = 0; j < d; ++j) {
        double gu = g[j], gr = g[d + j];
        for (int64_t k = 0; k < d; ++k) {
          gu += h[k] * w_ur[k * 2 * d + j];
          gr += h[k] * w_ur[k * 2 * d + d + j];
        }
        u[j] = Sigmoid(gu);
        rh[j] = Sigmoid(gr) * h[j];
      }
      for (int64_t j = 0; j < d; ++j) {
        double gc = g[2 * d + j];
        for (int64_t k = 0; k < d; ++k) gc += rh[k] * w_c[k * d + j];
        const double cand = std::tanh(gc);
        h[j] = c.origin ? u[j] * h[j] + (1 - u[j]) * cand
                        : (1 - u[j]) * h[j] + u[j] * cand;
        hidden[r * d + j] = h[j];
      }
    }
  }
  return hidden;
}

const Config kConfigs[] = {{false, false, false, true},
                           {true, false, false, true},
                           {false, true, true, true},
                           {true, true, true, false},
                           {false, false, true, false}};

TEST(GruOp, MatchesNaiveLoop) {
  uint64_t seed = 1;
  for (const Config& c : kConfigs) {
    const TensorMap in = Inputs(c, seed += 10);
    TensorMap out = RunOp(Gru(c), in);
    ASSERT_EQ(out["hidden"].shape(), Shape({10, kD}));
    EXPECT_EQ(out["hidden"].lod(), kLoD);
    const auto want = NaiveGru(c, in);
    const auto got = ToVector<double>(out["hidden"]);
    for (size_t e = 0; e < want.size(); ++e)
      EXPECT_NEAR(got[e], want[e], 1e-13)
          << e << " origin " << c.origin << " reverse " << c.reverse
          << " state " << c.state << " bias " << c.bias;
  }
}

TEST(GruOp, GradientsThroughTime) {
  uint64_t seed = 100;
  GradCheckOptions o;
  o.of = {"hidden"};
  for (const Config& c : kConfigs) {
    EXPECT_TRUE(CheckGradient(Gru(c), Inputs(c, seed += 10), o))
        << "origin " << c.origin << " reverse " << c.reverse << " state "
        << c.state << " bias " << c.bias;
  }
}

TEST(GruOp, GradientsOfOneSequenceAndOfLengthOne) {
  GradCheckOptions o;
  o.of = {"hidden"};
  for (const LoD& lod : {LoD{0, 5}, LoD{0, 1, 2, 3}}) {
    const Config c{false, true, true, true};
    EXPECT_TRUE(CheckGradient(Gru(c, "identity"), Inputs(c, 300, lod), o))
        << LoDToString(lod);
  }
}

TEST(GruOp, BadInputIsAnError) {
  const Config c{false, false, true, true};
  TensorMap in = Inputs(c, 7, LoD{0, 4, 4, 9, 10});
  std::string err = ErrorOf(Gru(c), in);
  EXPECT_NE(err.find("empty sequence (sequence 1"), std::string::npos) << err;

  in = Inputs(c, 7);
  in["w"] = RandomTensor<double>({kD, 4 * kD}, -1, 1, 8);
  err = ErrorOf(Gru(c), in);
  EXPECT_NE(err.find("Weight 'w'"), std::string::npos) << err;

  in = Inputs(c, 7);
  in["h0"] = RandomTensor<double>({5, kD}, -1, 1, 9);
  err = ErrorOf(Gru(c), in);
  EXPECT_NE(err.find("H0 'h0'"), std::string::npos) << err;

  in = Inputs(c, 7);
  in["x"].set_lod({});
  err = ErrorOf(Gru(c), in);
  EXPECT_NE(err.find("carries no sequence offsets"), std::string::npos) << err;
}

}  // namespace
}  // namespace fluid
