// The CUDA kernels of concat and split against their CPU kernels, float32
// and float64, forward and gradient (each is the other's gradient). Every
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

TEST(ConcatOpCuda, Axes) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  for (DataType dt : kFloatTypes) {
    for (int axis : {0, 1, 2, -1}) {
      Shape a{3, 4, 5}, b{3, 4, 5};
      const int ax = axis < 0 ? axis + 3 : axis;
      b[ax] = 2;
      auto op = MakeOp("concat", {{"X", {"a", "b"}}}, {{"Out", {"out"}}},
                       {{"axis", int32_t{axis}}});
      EXPECT_TRUE(
          CudaMatchesCpu(op, {{"a", RandomTensor(dt, a, -1, 1, seed++)},
                              {"b", RandomTensor(dt, b, -1, 1, seed++)}}))
          << DataTypeName(dt) << " axis " << axis;
    }
  }
}

TEST(SplitOpCuda, NumAndSections) {
  REQUIRE_GPU();
  uint64_t seed = 50;
  for (DataType dt : kFloatTypes) {
    Tensor x = RandomTensor(dt, {4, 6, 70}, -1, 1, seed++);
    auto by_num = MakeOp("split", {{"X", {"x"}}}, {{"Out", {"o0", "o1"}}},
                         {{"axis", int32_t{1}}, {"num", int32_t{2}}});
    EXPECT_TRUE(CudaMatchesCpu(by_num, {{"x", x}})) << DataTypeName(dt);
    auto by_sections = MakeOp(
        "split", {{"X", {"x"}}}, {{"Out", {"o0", "o1", "o2"}}},
        {{"axis", int32_t{-1}}, {"sections", std::vector<int32_t>{10, -1, 1}}});
    EXPECT_TRUE(CudaMatchesCpu(by_sections, {{"x", x}})) << DataTypeName(dt);
  }
}

}  // namespace
}  // namespace fluid
