// The CUDA kernels of the compare and logical ops, and increment's integer
// kernels, against their CPU kernels. Every test skips, saying why, without
// a CUDA build or a visible device.
#include <gtest/gtest.h>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaCheckOptions;
using testing::CudaMatchesCpu;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::ToVector;

CudaCheckOptions Forward() {
  CudaCheckOptions o;
  o.grad = false;
  return o;
}

TEST(CompareOpsCuda, MatchCpu) {
  REQUIRE_GPU();
  // Rounded to halves so that ties occur.
  auto halves = [](uint64_t seed, const Shape& shape) {
    std::vector<double> v =
        ToVector<double>(RandomTensor<double>(shape, -2, 2, seed));
    for (double& d : v) d = static_cast<int>(d * 2) / 2.0;
    return MakeTensor<double>(shape, v);
  };
  const Tensor x = halves(1, {3, 4, 5}), y = halves(2, {4});
  for (const char* type : {"less_than", "less_equal", "greater_than",
                           "greater_equal", "equal", "not_equal"}) {
    auto op = MakeOp(type, {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}},
                     {{"axis", 1}});
    EXPECT_TRUE(CudaMatchesCpu(op, {{"x", x}, {"y", y}}, Forward())) << type;
  }
}

TEST(LogicalOpsCuda, MatchCpu) {
  REQUIRE_GPU();
  std::vector<bool> xv, yv;
  for (int i = 0; i < 37; ++i) {
    xv.push_back(i % 3 == 0);
    yv.push_back(i % 2 == 0);
  }
  const Tensor x = MakeTensor<bool>({37}, xv), y = MakeTensor<bool>({37}, yv);
  for (const char* type : {"logical_and", "logical_or", "logical_xor"}) {
    auto op = MakeOp(type, {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}});
    EXPECT_TRUE(CudaMatchesCpu(op, {{"x", x}, {"y", y}}, Forward())) << type;
  }
  auto op = MakeOp("logical_not", {{"X", {"x"}}}, {{"Out", {"out"}}});
  EXPECT_TRUE(CudaMatchesCpu(op, {{"x", x}}, Forward()));
}

TEST(IncrementOpCuda, IntegerCounters) {
  REQUIRE_GPU();
  auto op =
      MakeOp("increment", {{"X", {"i"}}}, {{"Out", {"o"}}}, {{"step", 3.0f}});
  EXPECT_TRUE(
      CudaMatchesCpu(op, {{"i", MakeTensor<int64_t>({1}, {5})}}, Forward()));
  EXPECT_TRUE(
      CudaMatchesCpu(op, {{"i", MakeTensor<int32_t>({1}, {-5})}}, Forward()));
}

}  // namespace
}  // namespace fluid
