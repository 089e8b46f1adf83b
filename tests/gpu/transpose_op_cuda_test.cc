// The CUDA kernels of transpose against its CPU kernels, float32 and
// float64, forward and gradient, and int32 and int64 forward. Every test skips,
// saying why, without a CUDA build or a visible device.
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

TEST(TransposeOpCuda, Integers) {
  REQUIRE_GPU();
  auto op = MakeOp("transpose", {{"X", {"x"}}}, {{"Out", {"out"}}},
                   {{"axis", std::vector<int32_t>{2, 0, 1}}});
  testing::CudaCheckOptions o;
  o.grad = false;
  std::vector<int64_t> ids(2 * 3 * 4);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<int64_t>(i * 7919 % 101) - 50;
  std::vector<int32_t> ids32(ids.begin(), ids.end());
  EXPECT_TRUE(CudaMatchesCpu(
      op, {{"x", testing::MakeTensor<int64_t>({2, 3, 4}, ids)}}, o));
  EXPECT_TRUE(CudaMatchesCpu(
      op, {{"x", testing::MakeTensor<int32_t>({2, 3, 4}, ids32)}}, o));
}

}  // namespace
}  // namespace fluid
