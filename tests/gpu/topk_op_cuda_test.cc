// The CUDA kernels of top_k (forward and gradient) and arg_max against their
// CPU kernels, float32 and float64. Every test skips, saying why, without a
// CUDA build or a visible device.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

TEST(TopKOpCuda, Rows) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  for (DataType dt : kFloatTypes) {
    for (int k : {1, 4, 33}) {
      auto op =
          MakeOp("top_k", {{"X", {"x"}}},
                 {{"Out", {"out"}}, {"Indices", {"idx"}}}, {{"k", int32_t{k}}});
      EXPECT_TRUE(CudaMatchesCpu(
          op, {{"x", RandomTensor(dt, {7, 3, 33}, -1, 1, seed++)}}))
          << DataTypeName(dt) << " k " << k;
    }
  }
}

TEST(ArgMaxOpCuda, Axes) {
  REQUIRE_GPU();
  uint64_t seed = 40;
  for (DataType dt : kFloatTypes) {
    for (int64_t axis : {0, 1, 2}) {
      auto op = MakeOp("arg_max", {{"X", {"x"}}}, {{"Out", {"out"}}},
                       {{"axis", axis}});
      testing::CudaCheckOptions o;
      o.grad = false;
      EXPECT_TRUE(CudaMatchesCpu(
          op, {{"x", RandomTensor(dt, {5, 6, 70}, -1, 1, seed++)}}, o))
          << DataTypeName(dt) << " axis " << axis;
    }
  }
}

}  // namespace
}  // namespace fluid
