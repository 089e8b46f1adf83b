// The CUDA kernels of slice against its CPU kernels, float32 and float64
// forward and gradient, and int64; and shape's CUDA kernel. Every test
// skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <climits>
#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

proto::OpDesc Slice(const std::vector<int32_t>& axes,
                    const std::vector<int32_t>& starts,
                    const std::vector<int32_t>& ends) {
  return MakeOp("slice", {{"Input", {"x"}}}, {{"Out", {"out"}}},
                {{"axes", axes}, {"starts", starts}, {"ends", ends}});
}

TEST(SliceOpCuda, MatchesCpu) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  for (DataType dt : kFloatTypes) {
    EXPECT_TRUE(
        CudaMatchesCpu(Slice({1, 2}, {1, -4}, {3, INT_MAX}),
                       {{"x", RandomTensor(dt, {4, 5, 6}, -1, 1, seed++)}}));
    EXPECT_TRUE(CudaMatchesCpu(Slice({0}, {-3}, {-1}),
                               {{"x", RandomTensor(dt, {9}, -1, 1, seed++)}}));
  }
}

TEST(SliceOpCuda, IntegersAndShape) {
  REQUIRE_GPU();
  testing::CudaCheckOptions o;
  o.grad = false;
  EXPECT_TRUE(CudaMatchesCpu(
      Slice({0}, {1}, {3}),
      {{"x", testing::MakeTensor<int64_t>({4}, {5, 6, 7, 8})}}, o));
  EXPECT_TRUE(CudaMatchesCpu(
      MakeOp("shape", {{"Input", {"x"}}}, {{"Out", {"out"}}}),
      {{"x", RandomTensor(DataType::kFloat32, {2, 3, 4}, -1, 1, 9)}}, o));
}

}  // namespace
}  // namespace fluid
