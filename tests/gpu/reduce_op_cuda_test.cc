// The CUDA kernels of reduce_sum, reduce_mean, reduce_max, reduce_min and
// reduce_prod against their CPU kernels: float32 and float64 forward and
// gradient, groups reduced by a thread and by a block, and the integer
// forward kernels. Every test skips, saying why, without a CUDA build or a
// visible device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

const char* const kTypes[] = {"reduce_sum", "reduce_mean", "reduce_max",
                              "reduce_min", "reduce_prod"};

proto::OpDesc Reduce(const std::string& type, const std::vector<int32_t>& dim,
                     bool keep_dim, bool reduce_all) {
  return MakeOp(
      type, {{"X", {"x"}}}, {{"Out", {"out"}}},
      {{"dim", dim}, {"keep_dim", keep_dim}, {"reduce_all", reduce_all}});
}

TEST(ReduceOpCuda, MatchesCpu) {
  REQUIRE_GPU();
  struct Case {
    Shape x;
    std::vector<int32_t> dim;
    bool all;
  };
  uint64_t seed = 1;
  for (DataType dt : kFloatTypes) {
    for (const char* type : kTypes) {
      for (const Case& c : std::vector<Case>{{{5, 7}, {1}, false},
                                             {{4, 3, 6}, {0, 2}, false},
                                             {{3, 130}, {-1}, false},
                                             {{300, 2}, {0}, false},
                                             {{2, 3, 4}, {0}, true}}) {
        // Values near 1 keep products of 300 elements in range.
        EXPECT_TRUE(
            CudaMatchesCpu(Reduce(type, c.dim, true, c.all),
                           {{"x", RandomTensor(dt, c.x, 0.9, 1.1, seed++)}}))
            << type << " " << DataTypeName(dt) << " " << c.x;
      }
    }
  }
}

TEST(ReduceOpCuda, Integers) {
  REQUIRE_GPU();
  testing::CudaCheckOptions o;
  o.grad = false;
  std::vector<int64_t> v(4 * 90);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<int64_t>(i * 7919 % 7) - 3;
  for (const char* type :
       {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod"}) {
    for (const auto& dim : std::vector<std::vector<int32_t>>{{0}, {1}}) {
      EXPECT_TRUE(
          CudaMatchesCpu(Reduce(type, dim, false, false),
                         {{"x", testing::MakeTensor<int64_t>({4, 90}, v)}}, o))
          << type;
      EXPECT_TRUE(CudaMatchesCpu(
          Reduce(type, dim, false, false),
          {{"x", testing::MakeTensor<int32_t>(
                     {4, 90}, std::vector<int32_t>(v.begin(), v.end()))}},
          o))
          << type;
    }
  }
}

}  // namespace
}  // namespace fluid
