// The CUDA kernels of mean against its CPU kernels, from one element to a
// multi-block reduction, float32 and float64. Every test skips, saying
// why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

TEST(MeanOpCuda, Shapes) {
  REQUIRE_GPU();
  uint64_t seed = 400;
  for (DataType dt : kFloatTypes) {
    for (Shape s : {Shape({1}), Shape({3, 4}), Shape({4095}), Shape({4097}),
                    Shape({3, 5000}), Shape({1000, 1000})}) {
      auto op = MakeOp("mean", {{"X", {"x"}}}, {{"Out", {"out"}}});
      EXPECT_TRUE(
          CudaMatchesCpu(op, {{"x", RandomTensor(dt, s, -1, 3, seed++)}}))
          << DataTypeName(dt) << " " << s;
    }
  }
}

}  // namespace
}  // namespace fluid
