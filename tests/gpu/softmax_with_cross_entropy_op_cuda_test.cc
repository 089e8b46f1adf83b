// The CUDA kernels of softmax_with_cross_entropy against its CPU kernels:
// forward and gradient, ignored rows, large logits, 70000 rows, soft
// labels; float32 and float64. Also labels outside [0, C), which the CUDA
// kernels skip, and results that are the same bits run after run. Every
// test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::SoftmaxCeOp;
using testing::SomeLabels;
using testing::TensorMap;
using testing::ToVector;

template <typename T>
void CheckSoftmaxCe() {
  struct Case {
    Shape x;
    int every;
    int ignore_index;
    double range;  // logits in [-range, range]
  };
  const std::vector<Case> cases = {
      {{1, 1}, 0, -100, 3},    {{1, 10}, 0, -100, 3},  {{3, 7}, 0, -100, 3},
      {{5, 2}, 2, -100, 3},    {{64, 10}, 4, -100, 3}, {{3, 1001}, 2, -1, 3},
      {{2, 3, 5}, 2, -100, 3}, {{6, 4}, 0, 0, 3},      {{8, 40}, 3, -100, 60},
      {{70000, 3}, 5, -100, 3}};
  uint64_t seed = 400;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << c.x << " ignore_index " << c.ignore_index << " range "
                 << c.range);
    const int rank = c.x.rank();
    const int64_t rows = c.x.Product(0, rank - 1);
    const int64_t classes = c.x[rank - 1];
    Shape ls = c.x;
    ls[rank - 1] = 1;
    Tensor logits = RandomTensor<T>(c.x, -c.range, c.range, seed++);
    Tensor label = MakeTensor<int64_t>(
        ls, SomeLabels(rows, classes, c.every, c.ignore_index));
    EXPECT_TRUE(CudaMatchesCpu(SoftmaxCeOp("label", c.ignore_index),
                               {{"logits", logits}, {"label", label}}));
  }
}

TEST(SoftmaxWithCrossEntropyOpCuda, Float) {
  REQUIRE_GPU();
  CheckSoftmaxCe<float>();
}

TEST(SoftmaxWithCrossEntropyOpCuda, Double) {
  REQUIRE_GPU();
  CheckSoftmaxCe<double>();
}

// soft_label: label probabilities of Logits' shape (rows summing to 1, and
// rows that do not: the gradient is exact for both), forward and gradient.
template <typename T>
void CheckSoftLabel() {
  const std::vector<Shape> shapes = {{1, 1},    {3, 7},    {64, 10},
                                     {3, 1001}, {2, 3, 5}, {70000, 3}};
  uint64_t seed = 500;
  for (const Shape& shape : shapes) {
    for (bool normalised : {true, false}) {
      SCOPED_TRACE(::testing::Message()
                   << shape << " normalised " << normalised);
      const int rank = shape.rank();
      const int64_t rows = shape.Product(0, rank - 1);
      const int64_t classes = shape[rank - 1];
      std::vector<T> z = ToVector<T>(RandomTensor<T>(shape, 0.1, 1, seed++));
      for (int64_t i = 0; normalised && i < rows; ++i) {
        T total = 0;
        for (int64_t j = 0; j < classes; ++j) total += z[i * classes + j];
        for (int64_t j = 0; j < classes; ++j) z[i * classes + j] /= total;
      }
      proto::OpDesc op = SoftmaxCeOp();
      SetOpAttr(&op, "soft_label", true);
      EXPECT_TRUE(
          CudaMatchesCpu(op, {{"logits", RandomTensor<T>(shape, -3, 3, seed++)},
                              {"label", MakeTensor<T>(shape, z)}}));
    }
  }
}

TEST(SoftmaxWithCrossEntropyOpCuda, SoftLabelFloat) {
  REQUIRE_GPU();
  CheckSoftLabel<float>();
}

TEST(SoftmaxWithCrossEntropyOpCuda, SoftLabelDouble) {
  REQUIRE_GPU();
  CheckSoftLabel<double>();
}

// The CPU kernels reject a label outside [0, C); the CUDA kernels cannot
// see the labels on the host and skip such a row instead: loss 0, gradient
// 0, no read outside the row.
TEST(SoftmaxWithCrossEntropyOpCuda, OutOfRangeLabelsAreSkipped) {
  REQUIRE_GPU();
  const Place gpu = Place::CUDA(0);
  Tensor label = testing::Labels({1, 5, -3, 2});
  Tensor x = RandomTensor<double>({4, 5}, 0.05, 1, 9);
  TensorMap out =
      RunOp(SoftmaxCeOp(), {{"logits", x}, {"label", label}}, 1, gpu);
  auto loss = ToVector<double>(out["loss"]);
  EXPECT_EQ(loss[1], 0.0);
  EXPECT_EQ(loss[2], 0.0);
  // The softmax of a skipped row is still computed.
  auto sm = ToVector<double>(out["softmax"]);
  double sum = 0;
  for (int j = 0; j < 5; ++j) sum += sm[1 * 5 + j];
  EXPECT_NEAR(sum, 1.0, 1e-12);

  Tensor dy = RandomTensor<double>({4, 1}, -1, 1, 10);
  auto sce_grad = MakeOp("softmax_with_cross_entropy_grad",
                         {{"Softmax", {"softmax"}},
                          {"Label", {"label"}},
                          {GradVarName("Loss"), {"dloss"}}},
                         {{GradVarName("Logits"), {"dlogits"}}});
  auto dl = ToVector<double>(RunOp(
      sce_grad, {{"softmax", out["softmax"]}, {"label", label}, {"dloss", dy}},
      1, gpu)["dlogits"]);
  for (int j = 0; j < 5; ++j) {
    EXPECT_EQ(dl[1 * 5 + j], 0.0) << j;
    EXPECT_EQ(dl[2 * 5 + j], 0.0) << j;
  }
}

// Runs are the same bits every time: no atomics in the row reductions.
TEST(SoftmaxWithCrossEntropyOpCuda, ResultsAreBitwiseReproducible) {
  REQUIRE_GPU();
  const Place gpu = Place::CUDA(0);
  Tensor logits = RandomTensor<float>({300, 500}, -5, 5, 4);
  Tensor label = testing::Labels(SomeLabels(300, 500));
  TensorMap first =
      RunOp(SoftmaxCeOp(), {{"logits", logits}, {"label", label}}, 1, gpu);
  for (int run = 0; run < 3; ++run) {
    TensorMap again =
        RunOp(SoftmaxCeOp(), {{"logits", logits}, {"label", label}}, 1, gpu);
    EXPECT_EQ(ToVector<float>(again["softmax"]),
              ToVector<float>(first["softmax"]));
    EXPECT_EQ(ToVector<float>(again["loss"]), ToVector<float>(first["loss"]));
  }
}

}  // namespace
}  // namespace fluid
