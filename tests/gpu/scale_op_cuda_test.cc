// The CUDA kernels of scale against its CPU kernels: every form of the
// affine map, float32 and float64, forward and gradient. Every test skips,
// saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

TEST(ScaleOpCuda, Forms) {
  REQUIRE_GPU();
  struct Form {
    float scale, bias;
    bool after;
  };
  uint64_t seed = 200;
  for (DataType dt : kFloatTypes) {
    for (const Form& f : std::vector<Form>{{2.5f, 0.0f, true},
                                           {-0.75f, 0.5f, true},
                                           {1.5f, -0.25f, false},
                                           {1.0f, 0.0f, true}}) {
      for (Shape s : {Shape({1}), Shape({3, 7}), Shape({70001})}) {
        auto op = MakeOp("scale", {{"X", {"x"}}}, {{"Out", {"out"}}},
                         {{"scale", f.scale},
                          {"bias", f.bias},
                          {"bias_after_scale", f.after}});
        EXPECT_TRUE(
            CudaMatchesCpu(op, {{"x", RandomTensor(dt, s, -1, 1, seed++)}}))
            << DataTypeName(dt) << " scale " << f.scale << " bias " << f.bias
            << " after " << f.after << " " << s;
      }
    }
  }
}

TEST(ScaleOpCuda, InPlace) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    auto op = MakeOp("scale", {{"X", {"x"}}}, {{"Out", {"x"}}},
                     {{"scale", 3.0f}, {"bias", 1.0f}});
    EXPECT_TRUE(CudaMatchesCpu(op, {{"x", RandomTensor(dt, {5, 9}, -1, 1, 3)}}))
        << DataTypeName(dt);
  }
}

}  // namespace
}  // namespace fluid
