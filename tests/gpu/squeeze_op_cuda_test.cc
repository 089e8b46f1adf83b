// The CUDA kernels of squeeze2 and unsqueeze2 against their CPU kernels,
// float32 and float64 forward and gradient, and an int64 forward. Every
// test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

proto::OpDesc Op(const std::string& type, const std::vector<int32_t>& axes) {
  return MakeOp(type, {{"X", {"x"}}}, {{"Out", {"out"}}, {"XShape", {"xs"}}},
                {{"axes", axes}});
}

TEST(SqueezeOpCuda, MatchesCpu) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  for (DataType dt : kFloatTypes) {
    EXPECT_TRUE(
        CudaMatchesCpu(Op("squeeze2", {1}),
                       {{"x", RandomTensor(dt, {33, 1, 7}, -1, 1, seed++)}}));
    EXPECT_TRUE(
        CudaMatchesCpu(Op("unsqueeze2", {0, 2}),
                       {{"x", RandomTensor(dt, {33, 7}, -1, 1, seed++)}}));
  }
}

TEST(SqueezeOpCuda, Integers) {
  REQUIRE_GPU();
  testing::CudaCheckOptions o;
  o.grad = false;
  EXPECT_TRUE(CudaMatchesCpu(
      Op("unsqueeze2", {1}),
      {{"x", testing::MakeTensor<int64_t>({3}, {5, -1, 9})}}, o));
}

}  // namespace
}  // namespace fluid
