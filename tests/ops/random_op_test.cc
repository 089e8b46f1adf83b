#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::RunOp;
using testing::ToVector;

constexpr int32_t kF32 = static_cast<int32_t>(DataType::kFloat32);
constexpr int32_t kF64 = static_cast<int32_t>(DataType::kFloat64);

Tensor Uniform(const std::vector<int64_t>& shape, float lo, float hi,
               int32_t seed, int32_t dtype, const std::string& out = "out") {
  return RunOp(MakeOp("uniform_random", {}, {{"Out", {out}}},
                      {{"shape", shape},
                       {"min", lo},
                       {"max", hi},
                       {"seed", seed},
                       {"dtype", dtype}}),
               {})[out];
}

Tensor Gaussian(const std::vector<int64_t>& shape, float mean, float stddev,
                int32_t seed, int32_t dtype, const std::string& out = "out",
                const std::string& type = "gaussian_random") {
  return RunOp(MakeOp(type, {}, {{"Out", {out}}},
                      {{"shape", shape},
                       {"mean", mean},
                       {"std", stddev},
                       {"seed", seed},
                       {"dtype", dtype}}),
               {})[out];
}

std::vector<double> AsDoubles(const Tensor& t) {
  if (t.dtype() == DataType::kFloat64) return ToVector<double>(t);
  auto f = ToVector<float>(t);
  return std::vector<double>(f.begin(), f.end());
}

struct Moments {
  double mean = 0, stddev = 0;
};
Moments MomentsOf(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.mean += x;
  m.mean /= v.size();
  for (double x : v) m.stddev += (x - m.mean) * (x - m.mean);
  m.stddev = std::sqrt(m.stddev / (v.size() - 1));
  return m;
}

TEST(RandomOp, ShapeAndDtype) {
  Tensor u = Uniform({2, 3, 4}, -1, 1, 1, kF64);
  EXPECT_EQ(u.shape(), Shape({2, 3, 4}));
  EXPECT_EQ(u.dtype(), DataType::kFloat64);
  Tensor g = Gaussian({5, 7}, 0, 1, 1, kF32);
  EXPECT_EQ(g.shape(), Shape({5, 7}));
  EXPECT_EQ(g.dtype(), DataType::kFloat32);
  // An odd element count: Box-Muller's second value of the last pair is
  // dropped, not written past the end.
  EXPECT_EQ(Gaussian({3}, 0, 1, 1, kF64).numel(), 3);
  EXPECT_EQ(Uniform({0, 4}, 0, 1, 1, kF32).numel(), 0);
}

TEST(RandomOp, UniformRangeAndMoments) {
  const int64_t n = 100000;
  for (int32_t dtype : {kF32, kF64}) {
    const double lo = -2.0, hi = 3.0;
    auto v = AsDoubles(Uniform({n}, lo, hi, 42, dtype));
    for (double x : v) {
      ASSERT_GE(x, lo);
      ASSERT_LT(x, hi);
    }
    Moments m = MomentsOf(v);
    const double sd = (hi - lo) / std::sqrt(12.0);
    // 5 standard errors: a false alarm is a one-in-a-million event.
    EXPECT_NEAR(m.mean, (lo + hi) / 2, 5 * sd / std::sqrt(double(n)));
    EXPECT_NEAR(m.stddev, sd, 0.01 * sd);
    // Every tenth of the interval gets about a tenth of the samples.
    std::vector<int> bins(10, 0);
    for (double x : v) ++bins[static_cast<int>((x - lo) / (hi - lo) * 10)];
    for (int b : bins) EXPECT_NEAR(b, n / 10, 5 * std::sqrt(n * 0.09));
  }
}

TEST(RandomOp, UniformFloat32NeverReachesMax) {
  // A tiny interval makes rounding up to max likely if unguarded.
  auto v = ToVector<float>(Uniform({100000}, 1.0f, 1.0000001f, 3, kF32));
  for (float x : v) {
    ASSERT_GE(x, 1.0f);
    ASSERT_LT(x, 1.0000001f);
  }
}

TEST(RandomOp, GaussianMoments) {
  const int64_t n = 100000;
  for (int32_t dtype : {kF32, kF64}) {
    const double mean = 1.5, sd = 0.5;
    auto v = AsDoubles(Gaussian({n}, mean, sd, 7, dtype));
    Moments m = MomentsOf(v);
    EXPECT_NEAR(m.mean, mean, 5 * sd / std::sqrt(double(n)));
    // The sample std's standard error is about sd / sqrt(2n).
    EXPECT_NEAR(m.stddev, sd, 5 * sd / std::sqrt(2.0 * n));
    // The fractions within 1 and 2 sigma: 0.6827 and 0.9545.
    int64_t in1 = 0, in2 = 0;
    for (double x : v) {
      in1 += std::abs(x - mean) < sd;
      in2 += std::abs(x - mean) < 2 * sd;
    }
    EXPECT_NEAR(double(in1) / n, 0.6827, 0.01);
    EXPECT_NEAR(double(in2) / n, 0.9545, 0.005);
  }
}

Tensor Truncated(const std::vector<int64_t>& shape, float mean, float stddev,
                 int32_t seed, int32_t dtype, const std::string& out = "out") {
  return Gaussian(shape, mean, stddev, seed, dtype, out,
                  "truncated_gaussian_random");
}

// The standard normal's CDF, and that of N(0, 1) truncated to [-2, 2].
double Phi(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }
double TruncatedPhi(double z) {
  z = std::min(std::max(z, -2.0), 2.0);
  return (Phi(z) - Phi(-2.0)) / (Phi(2.0) - Phi(-2.0));
}

TEST(RandomOp, TruncatedGaussianDistribution) {
  const int64_t n = 100000;
  // N(0, 1) truncated to [-2, 2] has variance 1 - 4 phi(2) / (Phi(2) -
  // Phi(-2)), phi the normal density.
  const double phi2 = std::exp(-2.0) / std::sqrt(2.0 * M_PI);
  const double tsd = std::sqrt(1.0 - 4.0 * phi2 / (Phi(2.0) - Phi(-2.0)));
  for (int32_t dtype : {kF32, kF64}) {
    const double mean = -0.5, sd = 0.25;
    auto v = AsDoubles(Truncated({n}, mean, sd, 9, dtype));
    Moments m = MomentsOf(v);
    EXPECT_NEAR(m.mean, mean, 5 * sd * tsd / std::sqrt(double(n)));
    EXPECT_NEAR(m.stddev, sd * tsd, 5 * sd / std::sqrt(2.0 * n));
    for (double x : v) {
      ASSERT_GE(x, mean - 2 * sd - 1e-6);
      ASSERT_LE(x, mean + 2 * sd + 1e-6);
    }
    // Kolmogorov-Smirnov against the truncated CDF: the statistic exceeds
    // 1.95 / sqrt(n) with probability 0.001.
    std::sort(v.begin(), v.end());
    double ks = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double f = TruncatedPhi((v[i] - mean) / sd);
      ks = std::max(
          {ks, std::abs(f - double(i) / n), std::abs(f - double(i + 1) / n)});
    }
    EXPECT_LT(ks, 1.95 / std::sqrt(double(n)))
        << DataTypeName(static_cast<DataType>(dtype));
  }
}

TEST(RandomOp, TruncatedGaussianDeterministicForASeed) {
  auto draw = [](int32_t seed, const std::string& name) {
    return AsDoubles(Truncated({1001}, 0, 1, seed, kF64, name));
  };
  EXPECT_EQ(draw(5, "a"), draw(5, "b"));
  EXPECT_NE(draw(5, "a"), draw(6, "a"));
  EXPECT_EQ(draw(0, "fc_0.w"), draw(0, "fc_0.w"));
  EXPECT_NE(draw(0, "fc_0.w"), draw(0, "fc_1.w"));
  // std 0: every value is the mean.
  for (double x : AsDoubles(Truncated({9}, 0.75f, 0, 1, kF32)))
    EXPECT_EQ(x, 0.75);
}

TEST(RandomOp, DeterministicForASeed) {
  for (bool uniform : {true, false}) {
    auto draw = [&](int32_t seed, const std::string& name) {
      return AsDoubles(uniform ? Uniform({1000}, -1, 1, seed, kF32, name)
                               : Gaussian({1000}, 0, 1, seed, kF32, name));
    };
    EXPECT_EQ(draw(123, "a"), draw(123, "a"));
    // An explicit seed alone decides the values, whatever the var's name.
    EXPECT_EQ(draw(123, "a"), draw(123, "b"));
    EXPECT_NE(draw(123, "a"), draw(124, "a"));
    // Seed 0: derived from the name, so still reproducible, but distinct
    // per parameter.
    EXPECT_EQ(draw(0, "fc_0.w"), draw(0, "fc_0.w"));
    EXPECT_NE(draw(0, "fc_0.w"), draw(0, "fc_1.w"));
  }
}

TEST(RandomOp, KnownValues) {
  // The values must not change with the standard library or the build, since
  // jobs are reproducible from their seeds. The standard pins mt19937_64:
  // seeded with 5489, its 10000th output is 9981545732273789042.
  auto u = ToVector<double>(Uniform({10000}, 0, 1, 5489, kF64));
  EXPECT_EQ(u[9999], double(9981545732273789042ull >> 11) * 0x1.0p-53);
}

TEST(RandomOp, BadAttrsAreErrors) {
  EXPECT_THROW(Uniform({2, -1}, 0, 1, 1, kF32), Error);
  EXPECT_THROW(Uniform({2}, 1, 0, 1, kF32), Error);
  EXPECT_THROW(Gaussian({2}, 0, -1, 1, kF32), Error);
  EXPECT_THROW(Truncated({2}, 0, -1, 1, kF32), Error);
  EXPECT_THROW(Truncated({-1}, 0, 1, 1, kF32), Error);
  EXPECT_THROW(Uniform({2}, 0, 1, 1, static_cast<int32_t>(DataType::kInt32)),
               Error);
}

}  // namespace
}  // namespace fluid
