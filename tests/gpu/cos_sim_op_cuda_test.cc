// The CUDA kernels of cos_sim and norm against their CPU kernels: forward,
// saved norms and gradients, Y with X's rows and broadcast, every axis of
// norm; float32 and float64. Every test skips, saying why, without a CUDA
// build or a visible device.
#include <gtest/gtest.h>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

TEST(CosSimOpCuda, Shapes) {
  REQUIRE_GPU();
  uint64_t seed = 600;
  struct Case {
    Shape x, y;
  };
  for (DataType dt : kFloatTypes) {
    for (const Case& c :
         {Case{{1, 1}, {1, 1}}, Case{{4, 7}, {4, 7}}, Case{{4, 7}, {1, 7}},
          Case{{3, 2, 5}, {1, 2, 5}}, Case{{300, 600}, {300, 600}},
          Case{{300, 600}, {1, 600}}}) {
      auto op =
          MakeOp("cos_sim", {{"X", {"x"}}, {"Y", {"y"}}},
                 {{"Out", {"out"}}, {"XNorm", {"xn"}}, {"YNorm", {"yn"}}});
      testing::CudaCheckOptions opt;
      if (dt == DataType::kFloat32) opt.tolerance = 1e-4;  // 600-term sums
      EXPECT_TRUE(CudaMatchesCpu(op,
                                 {{"x", RandomTensor(dt, c.x, -1, 2, seed++)},
                                  {"y", RandomTensor(dt, c.y, -1, 2, seed++)}},
                                 opt))
          << DataTypeName(dt) << " " << c.x << " " << c.y;
    }
  }
}

TEST(NormOpCuda, Axes) {
  REQUIRE_GPU();
  uint64_t seed = 700;
  for (DataType dt : kFloatTypes) {
    for (int axis : {0, 1, 2, -1}) {
      auto op =
          MakeOp("norm", {{"X", {"x"}}}, {{"Out", {"out"}}, {"Norm", {"n"}}},
                 {{"axis", int32_t{axis}}, {"epsilon", 1e-6f}});
      EXPECT_TRUE(CudaMatchesCpu(
          op, {{"x", RandomTensor(dt, {3, 40, 5}, -1, 2, seed++)}}))
          << DataTypeName(dt) << " axis " << axis;
    }
  }
}

}  // namespace
}  // namespace fluid
