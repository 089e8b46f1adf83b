#include <gtest/gtest.h>

#include <cmath>

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
                int32_t seed, int32_t dtype, const std::string& out = "out") {
  return RunOp(MakeOp("gaussian_random", {}, {{"Out", {out}}},
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
  EXPECT_THROW(Uniform({2}, 0, 1, 1, static_cast<int32_t>(DataType::kInt32)),
               Error);
}

}  // namespace
}  // namespace fluid
