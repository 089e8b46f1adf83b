// The CUDA kernels of softmax (one block reduction per row) against its CPU
// kernels: forward and gradient, from one class to rows of 1000 and 70000
// rows, large logits; float32 and float64. Every test skips, saying why,
// without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::RandomTensor;

template <typename T>
void CheckSoftmax() {
  const std::vector<Shape> shapes = {{1, 1},   {3, 7},    {2, 3, 5},
                                     {5, 33},  {4, 1000}, {2, 257},
                                     {64, 10}, {7},       {70000, 3}};
  uint64_t seed = 200;
  for (const Shape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << s);
    auto op = MakeOp("softmax", {{"X", {"x"}}}, {{"Out", {"out"}}});
    EXPECT_TRUE(CudaMatchesCpu(op, {{"x", RandomTensor<T>(s, -3, 3, seed++)}}));
  }
  // Large logits: the row max is subtracted before exp.
  auto op = MakeOp("softmax", {{"X", {"x"}}}, {{"Out", {"out"}}});
  EXPECT_TRUE(
      CudaMatchesCpu(op, {{"x", RandomTensor<T>({6, 40}, -80, 80, 7)}}));
}

// A softmax over an axis other than the last: one thread per strided
// slice.
template <typename T>
void CheckSoftmaxAxis() {
  uint64_t seed = 300;
  for (int axis : {0, 1, 2, -2}) {
    SCOPED_TRACE(::testing::Message() << "axis=" << axis);
    auto op = MakeOp("softmax", {{"X", {"x"}}}, {{"Out", {"out"}}},
                     {{"axis", int32_t{axis}}});
    EXPECT_TRUE(CudaMatchesCpu(
        op, {{"x", RandomTensor<T>({3, 5, 7, 2}, -3, 3, seed++)}}));
  }
}

TEST(SoftmaxOpCuda, AxisFloat) {
  REQUIRE_GPU();
  CheckSoftmaxAxis<float>();
}

TEST(SoftmaxOpCuda, AxisDouble) {
  REQUIRE_GPU();
  CheckSoftmaxAxis<double>();
}

TEST(SoftmaxOpCuda, Float) {
  REQUIRE_GPU();
  CheckSoftmax<float>();
}

TEST(SoftmaxOpCuda, Double) {
  REQUIRE_GPU();
  CheckSoftmax<double>();
}

}  // namespace
}  // namespace fluid
