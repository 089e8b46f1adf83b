// lstm against a naive loop over each sequence's rows (Fluid's gate layout
// {c~, i, f, o}, peepholes on and off, forward and reverse, with and
// without H0/C0), its gradients (Input, Weight, Bias, H0, C0) by the
// numeric checker in float64 through sequences of different lengths
// (length 1 included), and its errors on bad input.
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

const LoD kLoD{0, 3, 4, 8, 10};  // lengths 3, 1, 4, 2
constexpr int64_t kD = 3;

struct Config {
  bool peepholes, reverse, state;
};

proto::OpDesc Lstm(const Config& c, const std::string& cand = "tanh") {
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"Input", {"x"}}, {"Weight", {"w"}}, {"Bias", {"b"}}};
  if (c.state) {
    in.push_back({"H0", {"h0"}});
    in.push_back({"C0", {"c0"}});
  }
  return MakeOp("lstm", in,
                {{"Hidden", {"hidden"}},
                 {"Cell", {"cell"}},
                 {"BatchGate", {"gate"}},
                 {"BatchCellPreAct", {"pre"}}},
                {{"use_peepholes", c.peepholes},
                 {"is_reverse", c.reverse},
                 {"candidate_activation", cand}});
}

TensorMap Inputs(const Config& c, uint64_t seed, const LoD& lod = kLoD) {
  const int64_t n = static_cast<int64_t>(lod.size()) - 1;
  TensorMap in{{"x", RandomTensor<double>({lod.back(), 4 * kD}, -1, 1, seed)},
               {"w", RandomTensor<double>({kD, 4 * kD}, -0.8, 0.8, seed + 1)},
               {"b", RandomTensor<double>({1, (c.peepholes ? 7 : 4) * kD}, -0.5,
                                          0.5, seed + 2)}};
  in["x"].set_lod(lod);
  if (c.state) {
    in["h0"] = RandomTensor<double>({n, kD}, -1, 1, seed + 3);
    in["c0"] = RandomTensor<double>({n, kD}, -1, 1, seed + 4);
  }
  return in;
}

double Sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

// {hidden, cell} of every row, one sequence and one row at a time.
std::pair<std::vector<double>, std::vector<double>> NaiveLstm(
    const Config& c, const TensorMap& in) {
  const auto x = ToVector<double>(in.at("x")), w = ToVector<double>(in.at("w"));
  const auto b = ToVector<double>(in.at("b"));
  const int64_t rows = kLoD.back(), d = kD;
  std::vector<double> hidden(rows * d), cell(rows * d);
  for (size_t s = 0; s + 1 < kLoD.size(); ++s) {
    std::vector<double> h(d, 0), cs(d, 0);
    if (c.state) {
      for (int64_t j = 0; j < d; ++j) {
        h[j] = ToVector<double>(in.at("h0"))[s * d + j];
        cs[j] = ToVector<double>(in.at("c0"))[s * d + j];
      }
    }
    const int64_t len = kLoD[s + 1] - kLoD[s];
    for (int64_t t = 0; t < len; ++t) {
      const int64_t r = kLoD[s] + (c.reverse ? len - 1 - t : t);
      std::vector<double> g(4 * d);
      for (int64_t m = 0; m < 4 * d; ++m) {
        g[m] = x[r * 4 * d + m] + b[m];
        for (int64_t k = 0; k < d; ++k) g[m] += h[k] * w[k * 4 * d + m];
      }
      for (int64_t j = 0; j < d; ++j) {
        const double pi = c.peepholes ? b[4 * d + j] : 0;
        const double pf = c.peepholes ? b[5 * d + j] : 0;
        const double po = c.peepholes ? b[6 * d + j] : 0;
        const double i = Sigmoid(g[d + j] + pi * cs[j]);
        const double f = Sigmoid(g[2 * d + j] + pf * cs[j]);
        cs[j] = std::tanh(g[j]) * i + f * cs[j];
        const double o = Sigmoid(g[3 * d + j] + po * cs[j]);
        h[j] = o * std::tanh(cs[j]);
        hidden[r * d + j] = h[j];
        cell[r * d + j] = cs[j];
      }
    }
  }
  return {hidden, cell};
}

const Config kConfigs[] = {{true, false, false}, {false, false, false},
                           {true, true, true},   {false, true, false},
                           {false, false, true}, {true, true, false}};

TEST(LstmOp, MatchesNaiveLoop) {
  uint64_t seed = 1;
  for (const Config& c : kConfigs) {
    const TensorMap in = Inputs(c, seed += 10);
    TensorMap out = RunOp(Lstm(c), in);
    ASSERT_EQ(out["hidden"].shape(), Shape({10, kD}));
    EXPECT_EQ(out["hidden"].lod(), kLoD);
    EXPECT_EQ(out["cell"].lod(), kLoD);
    const auto [hidden, cell] = NaiveLstm(c, in);
    const auto got_h = ToVector<double>(out["hidden"]);
    const auto got_c = ToVector<double>(out["cell"]);
    for (size_t e = 0; e < hidden.size(); ++e) {
      EXPECT_NEAR(got_h[e], hidden[e], 1e-13)
          << "hidden " << e << " peepholes " << c.peepholes << " reverse "
          << c.reverse << " state " << c.state;
      EXPECT_NEAR(got_c[e], cell[e], 1e-13) << "cell " << e;
    }
  }
}

TEST(LstmOp, GradientsThroughTime) {
  uint64_t seed = 100;
  GradCheckOptions o;
  o.of = {"hidden", "cell"};
  for (const Config& c : kConfigs) {
    EXPECT_TRUE(CheckGradient(Lstm(c), Inputs(c, seed += 10), o))
        << "peepholes " << c.peepholes << " reverse " << c.reverse << " state "
        << c.state;
  }
}

TEST(LstmOp, GradientsOfOneSequenceAndOfLengthOne) {
  GradCheckOptions o;
  o.of = {"hidden"};
  for (const LoD& lod : {LoD{0, 5}, LoD{0, 1, 2, 3}}) {
    const Config c{true, false, true};
    EXPECT_TRUE(CheckGradient(Lstm(c, "relu"), Inputs(c, 300, lod), o))
        << LoDToString(lod);
  }
}

TEST(LstmOp, BadInputIsAnError) {
  const Config c{true, false, false};
  TensorMap in = Inputs(c, 7, LoD{0, 3, 3, 10});
  std::string err = ErrorOf(Lstm(c), in);
  EXPECT_NE(err.find("empty sequence (sequence 1"), std::string::npos) << err;

  in = Inputs(c, 7);
  in["x"].set_lod({0, 3, 12});
  err = ErrorOf(Lstm(c), in);
  EXPECT_NE(err.find("[0, 3, 12] end at 12 but the data has 10 rows"),
            std::string::npos)
      << err;

  in = Inputs(c, 7);
  in["b"] = RandomTensor<double>({1, 4 * kD}, -1, 1, 8);
  err = ErrorOf(Lstm(c), in);
  EXPECT_NE(err.find("Bias 'b'"), std::string::npos) << err;
  EXPECT_NE(err.find("[1, 21]"), std::string::npos) << err;

  const Config s{false, false, true};
  in = Inputs(s, 7);
  in["h0"] = RandomTensor<double>({3, kD}, -1, 1, 9);
  err = ErrorOf(Lstm(s), in);
  EXPECT_NE(err.find("H0 'h0'"), std::string::npos) << err;

  err = ErrorOf(Lstm(c, "softsign"), Inputs(c, 7));
  EXPECT_NE(err.find("candidate_activation"), std::string::npos) << err;
}

}  // namespace
}  // namespace fluid
