// The CUDA kernels of fill_constant (every dtype) and fill_zeros_like
// (float32, float64) against their CPU kernels. Every test skips, saying
// why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

TEST(FillConstantOpCuda, Values) {
  REQUIRE_GPU();
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64, DataType::kInt32,
                      DataType::kInt64}) {
    for (float value : {0.0f, 2.5f, -1.75f, 1e6f}) {
      for (const std::vector<int64_t>& shape :
           std::vector<std::vector<int64_t>>{{1}, {3, 4}, {0, 3}, {70000}}) {
        auto op = MakeOp("fill_constant", {}, {{"Out", {"out"}}},
                         {{"shape", shape},
                          {"value", value},
                          {"dtype", static_cast<int32_t>(dt)}});
        EXPECT_TRUE(CudaMatchesCpu(op, {}))
            << DataTypeName(dt) << " " << value << " " << Shape(shape);
      }
    }
  }
}

TEST(FillZerosLikeOpCuda, Shapes) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    for (Shape s : {Shape({1}), Shape({7, 3}), Shape({0, 2})}) {
      auto op = MakeOp("fill_zeros_like", {{"X", {"x"}}}, {{"Out", {"out"}}});
      EXPECT_TRUE(CudaMatchesCpu(op, {{"x", RandomTensor(dt, s, -1, 1, 9)}}))
          << DataTypeName(dt) << " " << s;
    }
  }
}

}  // namespace
}  // namespace fluid
