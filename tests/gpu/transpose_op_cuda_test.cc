// The CUDA kernels of transpose against its CPU kernels, float32 and
// float64, forward and gradient. Every test skips, saying why, without a
// CUDA build or a visible device.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

TEST(TransposeOpCuda, Permutations) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  struct Case {
    Shape x;
    std::vector<int32_t> axis;
  };
  for (DataType dt : kFloatTypes) {
    for (const Case& c : std::vector<Case>{{{33, 70}, {1, 0}},
                                           {{4, 5, 6}, {2, 0, 1}},
                                           {{2, 3, 4, 5}, {0, 2, 3, 1}}}) {
      auto op = MakeOp("transpose", {{"X", {"x"}}}, {{"Out", {"out"}}},
                       {{"axis", c.axis}});
      EXPECT_TRUE(
          CudaMatchesCpu(op, {{"x", RandomTensor(dt, c.x, -1, 1, seed++)}}))
          << DataTypeName(dt) << " " << c.x;
    }
  }
}

}  // namespace
}  // namespace fluid
