// The CUDA kernels of gather against its CPU kernels, float32 and float64
// forward and gradient (repeated rows summed and overwritten), int32 and
// int64 indices. Every test skips, saying why, without a CUDA build or a
// visible device.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::MakeTensor;
using testing::RandomTensor;

TEST(GatherOpCuda, MatchesCpu) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  std::vector<int64_t> rows = {5, 0, 5, 2, 9, 0, 5};
  for (DataType dt : kFloatTypes) {
    for (bool overwrite : {false, true}) {
      auto op = MakeOp("gather", {{"X", {"x"}}, {"Index", {"i"}}},
                       {{"Out", {"out"}}}, {{"overwrite", overwrite}});
      EXPECT_TRUE(CudaMatchesCpu(
          op, {{"x", RandomTensor(dt, {10, 3, 4}, -1, 1, seed++)},
               {"i", MakeTensor<int64_t>({7}, rows)}}));
      EXPECT_TRUE(CudaMatchesCpu(
          op,
          {{"x", RandomTensor(dt, {10, 6}, -1, 1, seed++)},
           {"i", MakeTensor<int32_t>({7, 1}, std::vector<int32_t>(
                                                 rows.begin(), rows.end()))}}));
    }
  }
}

// Many positions naming few rows: the gradient adds (or overwrites) each
// row's values in Index's order, as the CPU does, so float32 too matches
// bit for bit (tolerance 0); rows 9, 10 and 11 get none.
TEST(GatherOpCuda, RepeatedRowsBitwise) {
  REQUIRE_GPU();
  std::vector<int64_t> rows;
  for (int i = 0; i < 300; ++i) rows.push_back((i * 7 + i / 13) % 9);
  testing::CudaCheckOptions exact;
  exact.tolerance = 0;
  uint64_t seed = 11;
  for (DataType dt : kFloatTypes) {
    for (bool overwrite : {false, true}) {
      auto op = MakeOp("gather", {{"X", {"x"}}, {"Index", {"i"}}},
                       {{"Out", {"out"}}}, {{"overwrite", overwrite}});
      EXPECT_TRUE(
          CudaMatchesCpu(op,
                         {{"x", RandomTensor(dt, {12, 5}, -1, 1, seed++)},
                          {"i", MakeTensor<int64_t>({300}, rows)}},
                         exact));
    }
  }
}

TEST(GatherOpCuda, Integers) {
  REQUIRE_GPU();
  testing::CudaCheckOptions o;
  o.grad = false;
  auto op =
      MakeOp("gather", {{"X", {"x"}}, {"Index", {"i"}}}, {{"Out", {"out"}}});
  EXPECT_TRUE(CudaMatchesCpu(op,
                             {{"x", MakeTensor<int64_t>({3}, {7, 8, 9})},
                              {"i", MakeTensor<int64_t>({2}, {2, 0})}},
                             o));
}

}  // namespace
}  // namespace fluid
