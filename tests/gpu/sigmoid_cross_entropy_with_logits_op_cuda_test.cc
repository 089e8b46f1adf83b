// The CUDA kernels of sigmoid_cross_entropy_with_logits against its CPU
// kernels, float32 and float64, with and without normalize and ignored
// elements, forward and gradient. Every test skips, saying why, without a
// CUDA build or a visible device.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

// Labels in [0, 1], every seventh element the ignore_index -1.
Tensor Labels(DataType dt, const Shape& s, uint64_t seed) {
  Tensor z = RandomTensor(dt, s, 0, 1, seed);
  for (int64_t i = 0; i < z.numel(); i += 7) {
    if (dt == DataType::kFloat32) {
      z.data<float>()[i] = -1;
    } else {
      z.data<double>()[i] = -1;
    }
  }
  return z;
}

TEST(SigmoidCrossEntropyWithLogitsOpCuda, Forms) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  for (DataType dt : kFloatTypes) {
    for (bool normalize : {false, true}) {
      for (Shape s : {Shape({1}), Shape({5, 9}), Shape({3, 7001})}) {
        auto op =
            MakeOp("sigmoid_cross_entropy_with_logits",
                   {{"X", {"x"}}, {"Label", {"label"}}}, {{"Out", {"out"}}},
                   {{"normalize", normalize}, {"ignore_index", -1}});
        EXPECT_TRUE(
            CudaMatchesCpu(op, {{"x", RandomTensor(dt, s, -8, 8, seed++)},
                                {"label", Labels(dt, s, seed++)}}))
            << DataTypeName(dt) << " normalize " << normalize << " " << s;
      }
    }
  }
}

}  // namespace
}  // namespace fluid
