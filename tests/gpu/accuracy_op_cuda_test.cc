// The CUDA kernels of accuracy against its CPU kernels: random and tied
// scores, with and without the counts, and NaN scores. float32 and float64.
// Every test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::AccuracyOp;
using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::MakeTensor;
using testing::RandomTensor;

Tensor RandomLabels(int64_t rows, int64_t classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(rows));
  for (auto& x : v) x = static_cast<int64_t>(rng() % classes);
  return MakeTensor<int64_t>({rows, 1}, v);
}

// Scores drawn from a few integers, so that rows have ties.
Tensor TiedScores(DataType dt, int64_t rows, int64_t classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(static_cast<size_t>(rows * classes));
  for (auto& x : v) x = static_cast<double>(rng() % 4);
  if (dt == DataType::kFloat64) return MakeTensor<double>({rows, classes}, v);
  return MakeTensor<float>({rows, classes},
                           std::vector<float>(v.begin(), v.end()));
}

TEST(AccuracyOpCuda, RandomAndTiedScores) {
  REQUIRE_GPU();
  struct Case {
    int64_t rows, classes;
  };
  uint64_t seed = 600;
  for (DataType dt : kFloatTypes) {
    for (const Case& c : std::vector<Case>{
             {1, 1}, {4, 3}, {64, 10}, {1000, 37}, {3, 100}, {257, 1000}}) {
      Tensor labels = RandomLabels(c.rows, c.classes, seed++);
      EXPECT_TRUE(CudaMatchesCpu(
          AccuracyOp(),
          {{"scores", RandomTensor(dt, {c.rows, c.classes}, -1, 1, seed++)},
           {"label", labels}}))
          << DataTypeName(dt) << " " << c.rows << "x" << c.classes;
      EXPECT_TRUE(CudaMatchesCpu(
          AccuracyOp(), {{"scores", TiedScores(dt, c.rows, c.classes, seed++)},
                         {"label", labels}}))
          << DataTypeName(dt) << " ties " << c.rows << "x" << c.classes;
      EXPECT_TRUE(CudaMatchesCpu(
          AccuracyOp("label", false),
          {{"scores", RandomTensor(dt, {c.rows, c.classes}, -1, 1, seed++)},
           {"label", labels}}))
          << DataTypeName(dt) << " no counts " << c.rows << "x" << c.classes;
    }
  }
}

// A NaN score never wins a comparison of the CPU's scan, and a NaN at index
// 0 is never left.
TEST(AccuracyOpCuda, NaNScores) {
  REQUIRE_GPU();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> v = {nan, 5,   1,   2,    // stays at 0
                                 1,   nan, 3,   2,    // 2
                                 nan, nan, nan, nan,  // 0
                                 4,   2,   nan, 4,    // 0 (tie with 3)
                                 -1,  nan, -1,  0};   // 3
  Tensor labels = MakeTensor<int64_t>({5, 1}, {0, 2, 0, 3, 3});
  Tensor d = MakeTensor<double>({5, 4}, v);
  Tensor f = MakeTensor<float>({5, 4}, std::vector<float>(v.begin(), v.end()));
  EXPECT_TRUE(CudaMatchesCpu(AccuracyOp(), {{"scores", d}, {"label", labels}}));
  EXPECT_TRUE(CudaMatchesCpu(AccuracyOp(), {{"scores", f}, {"label", labels}}));
  // Many classes, so that the NaNs fall in different lanes of a warp.
  std::vector<double> wide(3 * 100);
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = (i * 37 % 101) * 0.5;
  wide[0] = nan;
  wide[100 + 63] = nan;
  wide[200 + 1] = nan;
  Tensor w = MakeTensor<double>({3, 100}, wide);
  EXPECT_TRUE(CudaMatchesCpu(
      AccuracyOp(), {{"scores", w}, {"label", RandomLabels(3, 100, 1)}}));
}

TEST(AccuracyOpCuda, TopK) {
  REQUIRE_GPU();
  uint64_t seed = 900;
  for (DataType dt : kFloatTypes) {
    for (int k : {2, 5}) {
      auto op = AccuracyOp();
      SetOpAttr(&op, "k", int32_t{k});
      testing::CudaCheckOptions o;
      o.grad = false;
      EXPECT_TRUE(CudaMatchesCpu(op,
                                 {{"scores", TiedScores(dt, 300, 70, seed++)},
                                  {"label", RandomLabels(300, 70, seed++)}},
                                 o))
          << DataTypeName(dt) << " k " << k;
    }
  }
}

}  // namespace
}  // namespace fluid
