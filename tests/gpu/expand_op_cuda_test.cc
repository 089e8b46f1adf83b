// The CUDA kernels of expand against its CPU kernels, float32 and float64
// forward and gradient, and int64 forward. Every test skips, saying why,
// without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

proto::OpDesc Expand(const std::vector<int32_t>& times) {
  return MakeOp("expand", {{"X", {"x"}}}, {{"Out", {"out"}}},
                {{"expand_times", times}});
}

TEST(ExpandOpCuda, MatchesCpu) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  for (DataType dt : kFloatTypes) {
    EXPECT_TRUE(
        CudaMatchesCpu(Expand({3, 1, 2}),
                       {{"x", RandomTensor(dt, {4, 5, 3}, -1, 1, seed++)}}));
    EXPECT_TRUE(CudaMatchesCpu(Expand({40}),
                               {{"x", RandomTensor(dt, {7}, -1, 1, seed++)}}));
  }
}

TEST(ExpandOpCuda, Integers) {
  REQUIRE_GPU();
  testing::CudaCheckOptions o;
  o.grad = false;
  EXPECT_TRUE(CudaMatchesCpu(
      Expand({2, 3}), {{"x", testing::MakeTensor<int64_t>({2, 1}, {4, -5})}},
      o));
}

}  // namespace
}  // namespace fluid
