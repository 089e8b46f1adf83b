// The CUDA kernels of cross_entropy against its CPU kernels: forward and
// gradient, ignored rows, float32 and float64; and labels outside [0, C),
// which the CUDA kernels skip. Every test skips, saying why, without a CUDA
// build or a visible device.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::CrossEntropyOp;
using testing::CudaMatchesCpu;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::SomeLabels;
using testing::ToVector;

template <typename T>
void CheckCrossEntropy() {
  struct Case {
    Shape x;
    int every;  // every-th row ignored (0: none)
    int ignore_index;
  };
  const std::vector<Case> cases = {
      {{1, 1}, 0, -100},   {{1, 10}, 0, -100}, {{5, 7}, 3, -100},
      {{64, 10}, 4, -100}, {{3, 1001}, 2, -1}, {{2, 3, 5}, 2, -100},
      {{6, 4}, 0, 0},  // class 0 is the ignored one
  };
  uint64_t seed = 300;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << c.x << " ignore_index " << c.ignore_index);
    const int rank = c.x.rank();
    const int64_t rows = c.x.Product(0, rank - 1);
    const int64_t classes = c.x[rank - 1];
    Shape ls = c.x;
    ls[rank - 1] = 1;
    // Probabilities away from 0, as a softmax gives.
    Tensor x = RandomTensor<T>(c.x, 0.05, 1, seed++);
    Tensor label = MakeTensor<int64_t>(
        ls, SomeLabels(rows, classes, c.every, c.ignore_index));
    EXPECT_TRUE(CudaMatchesCpu(CrossEntropyOp("label", c.ignore_index),
                               {{"x", x}, {"label", label}}));
  }
}

TEST(CrossEntropyOpCuda, Float) {
  REQUIRE_GPU();
  CheckCrossEntropy<float>();
}

TEST(CrossEntropyOpCuda, Double) {
  REQUIRE_GPU();
  CheckCrossEntropy<double>();
}

// The CPU kernels reject a label outside [0, C); the CUDA kernels cannot
// see the labels on the host and skip such a row instead: loss 0, gradient
// 0, no read outside the row.
TEST(CrossEntropyOpCuda, OutOfRangeLabelsAreSkipped) {
  REQUIRE_GPU();
  const Place gpu = Place::CUDA(0);
  Tensor label = testing::Labels({1, 5, -3, 2});
  Tensor x = RandomTensor<double>({4, 5}, 0.05, 1, 9);
  Tensor y = RunOp(CrossEntropyOp(), {{"x", x}, {"label", label}}, 1, gpu)["y"];
  auto yv = ToVector<double>(y);
  auto xv = ToVector<double>(x);
  EXPECT_DOUBLE_EQ(yv[0], -std::log(xv[0 * 5 + 1]));
  EXPECT_EQ(yv[1], 0.0);
  EXPECT_EQ(yv[2], 0.0);
  EXPECT_DOUBLE_EQ(yv[3], -std::log(xv[3 * 5 + 2]));

  Tensor dy = RandomTensor<double>({4, 1}, -1, 1, 10);
  auto ce_grad =
      MakeOp("cross_entropy_grad",
             {{"X", {"x"}}, {"Label", {"label"}}, {GradVarName("Y"), {"dy"}}},
             {{GradVarName("X"), {"dx"}}});
  auto dx = ToVector<double>(
      RunOp(ce_grad, {{"x", x}, {"label", label}, {"dy", dy}}, 1, gpu)["dx"]);
  for (int j = 0; j < 5; ++j) {
    EXPECT_EQ(dx[1 * 5 + j], 0.0) << j;
    EXPECT_EQ(dx[2 * 5 + j], 0.0) << j;
  }
}

TEST(CrossEntropyOpCuda, SoftLabels) {
  REQUIRE_GPU();
  uint64_t seed = 700;
  for (DataType dt : testing::kFloatTypes) {
    auto op = MakeOp("cross_entropy", {{"X", {"x"}}, {"Label", {"label"}}},
                     {{"Y", {"y"}}}, {{"soft_label", true}});
    EXPECT_TRUE(CudaMatchesCpu(
        op, {{"x", RandomTensor(dt, {9, 300}, 0.05, 1, seed++)},
             {"label", RandomTensor(dt, {9, 300}, 0, 1, seed++)}}))
        << DataTypeName(dt);
  }
}

}  // namespace
}  // namespace fluid
