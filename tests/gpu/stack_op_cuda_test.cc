// The CUDA kernels of stack and unstack against their CPU kernels, float32
// and float64 forward and gradient, and int64. Every test skips, saying
// why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

TEST(StackOpCuda, MatchesCpu) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  for (DataType dt : kFloatTypes) {
    for (int axis : {0, 1, -1}) {
      auto stack = MakeOp("stack", {{"X", {"a", "b", "c"}}}, {{"Y", {"y"}}},
                          {{"axis", axis}});
      EXPECT_TRUE(CudaMatchesCpu(
          stack, {{"a", RandomTensor(dt, {5, 7}, -1, 1, seed++)},
                  {"b", RandomTensor(dt, {5, 7}, -1, 1, seed++)},
                  {"c", RandomTensor(dt, {5, 7}, -1, 1, seed++)}}))
          << axis;
      auto unstack = MakeOp("unstack", {{"X", {"x"}}}, {{"Y", {"p", "q"}}},
                            {{"axis", axis}, {"num", 2}});
      Shape x = axis == 0 ? Shape{2, 5, 3} : Shape{5, 2, 2};
      EXPECT_TRUE(
          CudaMatchesCpu(unstack, {{"x", RandomTensor(dt, x, -1, 1, seed++)}}))
          << axis;
    }
  }
}

TEST(StackOpCuda, Integers) {
  REQUIRE_GPU();
  testing::CudaCheckOptions o;
  o.grad = false;
  auto stack =
      MakeOp("stack", {{"X", {"a", "b"}}}, {{"Y", {"y"}}}, {{"axis", 1}});
  EXPECT_TRUE(CudaMatchesCpu(stack,
                             {{"a", testing::MakeTensor<int64_t>({2}, {1, 2})},
                              {"b", testing::MakeTensor<int64_t>({2}, {3, 4})}},
                             o));
}

}  // namespace
}  // namespace fluid
