// The CUDA kernels of reshape against its CPU kernels, float32 and
// float64. Every test skips, saying why, without a CUDA build or a visible
// device.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

TEST(ReshapeOpCuda, Specs) {
  REQUIRE_GPU();
  struct Case {
    Shape x;
    std::vector<int64_t> spec;
  };
  uint64_t seed = 500;
  for (DataType dt : kFloatTypes) {
    for (const Case& c : std::vector<Case>{{{2, 3, 4}, {6, 4}},
                                           {{2, 3, 4}, {0, -1}},
                                           {{2, 3, 4}, {-1}},
                                           {{12}, {3, 2, 2}},
                                           {{5, 1}, {1, 5}},
                                           {{64, 3, 8, 8}, {0, -1}}}) {
      auto op = MakeOp("reshape", {{"X", {"x"}}}, {{"Out", {"out"}}},
                       {{"shape", c.spec}});
      EXPECT_TRUE(
          CudaMatchesCpu(op, {{"x", RandomTensor(dt, c.x, -1, 1, seed++)}}))
          << DataTypeName(dt) << " " << c.x << " to " << Shape(c.spec);
    }
  }
}

}  // namespace
}  // namespace fluid
