// linear_chain_crf against brute-force enumeration of every tag path of
// tiny sequences (float64, to 1e-12), its gradient by the numeric checker,
// padded mode against LoD mode, and the errors.
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
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc Crf(bool padded = false) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"Emission", {"x"}}, {"Transition", {"w"}}, {"Label", {"label"}}};
  if (padded) in.push_back({"Length", {"length"}});
  return MakeOp("linear_chain_crf", in,
                {{"Alpha", {"alpha"}},
                 {"EmissionExps", {"ex"}},
                 {"TransitionExps", {"wx"}},
                 {"LogLikelihood", {"nll"}}});
}

// The score of `path` for the sequence at rows [r, r + len) of x.
double PathScore(const std::vector<double>& x, const std::vector<double>& w,
                 int64_t d, int64_t r, const std::vector<int64_t>& path) {
  const size_t len = path.size();
  double s = w[path[0]] + w[d + path[len - 1]];
  for (size_t t = 0; t < len; ++t) s += x[(r + t) * d + path[t]];
  for (size_t t = 1; t < len; ++t) s += w[(2 + path[t - 1]) * d + path[t]];
  return s;
}

// -log P(label) by enumerating all d^len paths; also the best path.
double BruteForceNll(const std::vector<double>& x, const std::vector<double>& w,
                     int64_t d, int64_t r, const std::vector<int64_t>& label,
                     std::vector<int64_t>* best = nullptr) {
  const size_t len = label.size();
  if (len == 0) return 0;
  std::vector<int64_t> path(len, 0);
  std::vector<double> scores;
  double best_score = -INFINITY;
  while (true) {
    const double s = PathScore(x, w, d, r, path);
    scores.push_back(s);
    if (s > best_score && best != nullptr) {
      best_score = s;
      *best = path;
    }
    size_t k = 0;
    while (k < len && ++path[k] == d) path[k++] = 0;
    if (k == len) break;
  }
  double m = -INFINITY;
  for (double s : scores) m = std::max(m, s);
  long double z = 0;
  for (double s : scores) z += std::exp(static_cast<long double>(s - m));
  return m + static_cast<double>(std::log(z)) - PathScore(x, w, d, r, label);
}

struct Batch {
  Tensor x, w, label;
};

Batch RandomBatch(const LoD& lod, int64_t d, uint64_t seed) {
  Batch b;
  b.x = RandomTensor<double>({lod.back(), d}, -2, 2, seed);
  b.x.set_lod(lod);
  b.w = RandomTensor<double>({d + 2, d}, -1, 1, seed + 1);
  std::vector<int64_t> labels;
  for (int64_t r = 0; r < lod.back(); ++r) labels.push_back((r * 7 + seed) % d);
  b.label = MakeTensor<int64_t>({lod.back(), 1}, labels);
  b.label.set_lod(lod);
  return b;
}

TEST(LinearChainCrfOp, EqualsBruteForceOverAllPaths) {
  const int64_t d = 3;
  const LoD lod{0, 1, 4, 4, 6, 9};
  Batch b = RandomBatch(lod, d, 11);
  auto out = RunOp(Crf(), {{"x", b.x}, {"w", b.w}, {"label", b.label}});
  ASSERT_EQ(out["nll"].shape(), Shape({5, 1}));
  EXPECT_EQ(out["alpha"].lod(), lod);
  auto x = ToVector<double>(b.x), w = ToVector<double>(b.w);
  auto label = ToVector<int64_t>(b.label);
  auto nll = ToVector<double>(out["nll"]);
  for (size_t i = 0; i + 1 < lod.size(); ++i) {
    std::vector<int64_t> l(label.begin() + lod[i], label.begin() + lod[i + 1]);
    const double want = BruteForceNll(x, w, d, lod[i], l);
    EXPECT_NEAR(nll[i], want, 1e-12 * std::max(1.0, std::fabs(want))) << i;
    EXPECT_GE(nll[i], 0.0) << i;  // a negative log-likelihood
  }
  // Alpha's rows are distributions, EmissionExps exp(x - row max),
  // TransitionExps exp(w).
  auto alpha = ToVector<double>(out["alpha"]);
  auto ex = ToVector<double>(out["ex"]);
  for (int64_t r = 0; r < lod.back(); ++r) {
    double sum = 0, mx = -INFINITY;
    for (int64_t j = 0; j < d; ++j) {
      sum += alpha[r * d + j];
      mx = std::max(mx, x[r * d + j]);
    }
    EXPECT_NEAR(sum, 1.0, 1e-14) << r;
    for (int64_t j = 0; j < d; ++j)
      EXPECT_NEAR(ex[r * d + j], std::exp(x[r * d + j] - mx), 1e-15);
  }
  auto wx = ToVector<double>(out["wx"]);
  for (size_t k = 0; k < w.size(); ++k)
    EXPECT_NEAR(wx[k], std::exp(w[k]), 1e-14);
}

TEST(LinearChainCrfOp, LargeScoresStayFinite) {
  // Emissions of +-400 overflow exp in float64 unless shifted.
  Batch b = RandomBatch({0, 3, 7}, 4, 3);
  auto* p = b.x.data<double>();
  for (int64_t k = 0; k < b.x.numel(); ++k) p[k] *= 200;
  auto* q = b.w.data<double>();
  for (int64_t k = 0; k < b.w.numel(); ++k) q[k] *= 300;
  auto out = RunOp(Crf(), {{"x", b.x}, {"w", b.w}, {"label", b.label}});
  auto x = ToVector<double>(b.x), w = ToVector<double>(b.w);
  auto label = ToVector<int64_t>(b.label);
  auto nll = ToVector<double>(out["nll"]);
  const LoD lod = b.x.lod();
  for (size_t i = 0; i + 1 < lod.size(); ++i) {
    std::vector<int64_t> l(label.begin() + lod[i], label.begin() + lod[i + 1]);
    const double want = BruteForceNll(x, w, 4, lod[i], l);
    ASSERT_TRUE(std::isfinite(nll[i])) << i;
    EXPECT_NEAR(nll[i], want, 1e-12 * std::max(1.0, std::fabs(want))) << i;
  }
}

// Float32 with transitions spread over +-150: the shifted exponentials of
// a column underflow, so the recursions fall back to exact log-sum-exps;
// the cost and the gradients stay those of float64.
TEST(LinearChainCrfOp, Float32WithExtremeWeightsMatchesFloat64) {
  const LoD lod{0, 3, 7, 8};
  Batch b = RandomBatch(lod, 4, 51);
  auto* q = b.w.data<double>();
  for (int64_t k = 0; k < b.w.numel(); ++k) q[k] *= 150;
  auto* p = b.x.data<double>();
  for (int64_t k = 0; k < b.x.numel(); ++k) p[k] *= 25;
  Tensor x32, w32;
  float* xp = x32.mutable_data<float>(b.x.shape());
  for (int64_t k = 0; k < b.x.numel(); ++k) xp[k] = static_cast<float>(p[k]);
  x32.set_lod(lod);
  float* wp = w32.mutable_data<float>(b.w.shape());
  for (int64_t k = 0; k < b.w.numel(); ++k) wp[k] = static_cast<float>(q[k]);
  // The float64 run on the float32 values, so that only precision differs.
  for (int64_t k = 0; k < b.x.numel(); ++k) p[k] = xp[k];
  for (int64_t k = 0; k < b.w.numel(); ++k) q[k] = wp[k];
  auto want = RunOp(Crf(), {{"x", b.x}, {"w", b.w}, {"label", b.label}});
  auto got = RunOp(Crf(), {{"x", x32}, {"w", w32}, {"label", b.label}});
  auto w64 = ToVector<double>(want["nll"]);
  auto w32v = ToVector<float>(got["nll"]);
  for (size_t i = 0; i < w64.size(); ++i) {
    ASSERT_TRUE(std::isfinite(w32v[i])) << i;
    EXPECT_NEAR(w32v[i], w64[i], 1e-5 * std::max(1.0, std::fabs(w64[i]))) << i;
  }
  // The gradients (each a difference of probabilities) alike too.
  auto grad_op =
      MakeOp("linear_chain_crf_grad",
             {{"Emission", {"x"}},
              {"Transition", {"w"}},
              {"Label", {"label"}},
              {"LogLikelihood@GRAD", {"g"}}},
             {{"Emission@GRAD", {"dx"}}, {"Transition@GRAD", {"dw"}}});
  const int64_t n = LoDCount(lod);
  Tensor g64 = testing::FilledTensor(DataType::kFloat64, {n, 1}, 1.0);
  Tensor g32 = testing::FilledTensor(DataType::kFloat32, {n, 1}, 1.0);
  auto d64 =
      RunOp(grad_op, {{"x", b.x}, {"w", b.w}, {"label", b.label}, {"g", g64}});
  auto d32 =
      RunOp(grad_op, {{"x", x32}, {"w", w32}, {"label", b.label}, {"g", g32}});
  for (const char* v : {"dx", "dw"}) {
    auto a64 = ToVector<double>(d64[v]);
    auto a32 = ToVector<float>(d32[v]);
    ASSERT_EQ(a64.size(), a32.size());
    for (size_t k = 0; k < a64.size(); ++k)
      EXPECT_NEAR(a32[k], a64[k], 1e-4) << v << " " << k;
  }
  testing::GradCheckOptions o;
  o.wrt = {"x", "w"};
  o.of = {"nll"};
  o.step = 1e-4;  // the float64 gradient at these scales
  EXPECT_TRUE(
      CheckGradient(Crf(), {{"x", b.x}, {"w", b.w}, {"label", b.label}}, o));
}

TEST(LinearChainCrfOp, NumericGradient) {
  testing::GradCheckOptions o;
  o.wrt = {"x", "w"};
  o.of = {"nll"};
  for (const LoD& lod : {LoD{0, 1, 4, 4, 6}, LoD{0, 5}}) {
    Batch b = RandomBatch(lod, 3, 21);
    EXPECT_TRUE(
        CheckGradient(Crf(), {{"x", b.x}, {"w", b.w}, {"label", b.label}}, o))
        << LoDToString(lod);
  }
}

TEST(LinearChainCrfOp, PaddedEqualsLoD) {
  const int64_t d = 3, s = 4;
  const LoD lod{0, 2, 6, 6, 7};
  Batch b = RandomBatch(lod, d, 31);
  auto lod_out = RunOp(Crf(), {{"x", b.x}, {"w", b.w}, {"label", b.label}});
  const int64_t n = 4;
  Tensor px = testing::FilledTensor(DataType::kFloat64, {n, s, d}, 9.0);
  std::vector<int64_t> pl(n * s, 0), lengths;
  auto x = ToVector<double>(b.x);
  auto label = ToVector<int64_t>(b.label);
  for (int64_t i = 0; i < n; ++i) {
    lengths.push_back(lod[i + 1] - lod[i]);
    for (int64_t r = lod[i]; r < lod[i + 1]; ++r) {
      pl[i * s + r - lod[i]] = label[r];
      for (int64_t j = 0; j < d; ++j)
        px.data<double>()[(i * s + r - lod[i]) * d + j] = x[r * d + j];
    }
  }
  auto out = RunOp(Crf(true), {{"x", px},
                               {"w", b.w},
                               {"label", MakeTensor<int64_t>({n, s}, pl)},
                               {"length", MakeTensor<int64_t>({n}, lengths)}});
  EXPECT_EQ(ToVector<double>(out["nll"]), ToVector<double>(lod_out["nll"]));
  EXPECT_EQ(out["alpha"].shape(), Shape({n, s, d}));
  testing::GradCheckOptions o;
  o.wrt = {"x", "w"};
  o.of = {"nll"};
  EXPECT_TRUE(CheckGradient(Crf(true),
                            {{"x", px},
                             {"w", b.w},
                             {"label", MakeTensor<int64_t>({n, s}, pl)},
                             {"length", MakeTensor<int64_t>({n}, lengths)}},
                            o));
}

TEST(LinearChainCrfOp, ErrorsNameTheCause) {
  Batch b = RandomBatch({0, 2, 5}, 3, 41);
  Tensor bad = b.label;
  bad.data<int64_t>()[3] = 3;
  std::string err = ErrorOf(Crf(), {{"x", b.x}, {"w", b.w}, {"label", bad}});
  EXPECT_NE(err.find("holds 3 at row 3"), std::string::npos) << err;
  EXPECT_NE(err.find("[0, 3)"), std::string::npos) << err;
  Tensor w4 = RandomTensor<double>({4, 3}, -1, 1, 1);
  err = ErrorOf(Crf(), {{"x", b.x}, {"w", w4}, {"label", b.label}});
  EXPECT_NE(err.find("Transition"), std::string::npos) << err;
  EXPECT_NE(err.find("[5, 3]"), std::string::npos) << err;
  Tensor plain = RandomTensor<double>({5, 3}, -1, 1, 1);
  err = ErrorOf(Crf(), {{"x", plain}, {"w", b.w}, {"label", b.label}});
  EXPECT_NE(err.find("LoD"), std::string::npos) << err;
  Tensor l32 = MakeTensor<int32_t>({5, 1}, {0, 1, 2, 0, 1});
  err = ErrorOf(Crf(), {{"x", b.x}, {"w", b.w}, {"label", l32}});
  EXPECT_NE(err.find("must be int64"), std::string::npos) << err;
  Tensor px = RandomTensor<double>({2, 3, 3}, -1, 1, 1);
  Tensor pl = MakeTensor<int64_t>({2, 3}, {0, 1, 2, 0, 1, 2});
  err = ErrorOf(Crf(true), {{"x", px},
                            {"w", b.w},
                            {"label", pl},
                            {"length", MakeTensor<int64_t>({2}, {3, 4})}});
  EXPECT_NE(err.find("Length[1] is 4"), std::string::npos) << err;
}

}  // namespace
}  // namespace fluid
