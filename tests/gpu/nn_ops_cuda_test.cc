// The CUDA kernels of prelu, smooth_l1_loss and group_norm against their CPU
// kernels: forward, saved values and every gradient; float32 and float64.
// Every test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

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

TEST(SmoothL1LossOpCuda, Shapes) {
  REQUIRE_GPU();
  uint64_t seed = 900;
  for (DataType dt : kFloatTypes) {
    for (const Shape& s :
         {Shape({1, 1}), Shape({4, 7}), Shape({3, 2, 5}), Shape({64, 3000})}) {
      for (bool weighted : {false, true}) {
        std::vector<std::pair<std::string, std::vector<std::string>>> in = {
            {"X", {"x"}}, {"Y", {"y"}}};
        testing::TensorMap t = {{"x", RandomTensor(dt, s, -3, 3, seed++)},
                                {"y", RandomTensor(dt, s, -3, 3, seed++)}};
        if (weighted) {
          in.push_back({"InsideWeight", {"iw"}});
          in.push_back({"OutsideWeight", {"ow"}});
          t["iw"] = RandomTensor(dt, s, 0, 2, seed++);
          t["ow"] = RandomTensor(dt, s, 0, 2, seed++);
        }
        auto op =
            MakeOp("smooth_l1_loss", in, {{"Diff", {"diff"}}, {"Out", {"out"}}},
                   {{"sigma", 2.0f}});
        testing::CudaCheckOptions opt;
        if (dt == DataType::kFloat32) opt.tolerance = 1e-4;  // 3000-term sums
        EXPECT_TRUE(CudaMatchesCpu(op, t, opt))
            << DataTypeName(dt) << " " << s << " weighted " << weighted;
      }
    }
  }
}

TEST(GroupNormOpCuda, Layouts) {
  REQUIRE_GPU();
  uint64_t seed = 1000;
  struct Case {
    Shape x;
    int groups;
    std::string layout;
  };
  for (DataType dt : kFloatTypes) {
    for (const Case& c :
         {Case{{2, 6, 3, 2}, 3, "NCHW"}, Case{{3, 4}, 2, "NCHW"},
          Case{{2, 3, 2, 6}, 2, "NHWC"}, Case{{4, 64, 16, 16}, 8, "NCHW"}}) {
      const int64_t ch = c.layout == "NHWC" ? c.x[c.x.rank() - 1] : c.x[1];
      for (int params = 0; params < 4; ++params) {
        std::vector<std::pair<std::string, std::vector<std::string>>> in = {
            {"X", {"x"}}};
        testing::TensorMap t = {{"x", RandomTensor(dt, c.x, -3, 3, seed++)}};
        if (params & 1) {
          in.push_back({"Scale", {"scale"}});
          t["scale"] = RandomTensor(dt, {ch}, 0.5, 2, seed++);
        }
        if (params & 2) {
          in.push_back({"Bias", {"bias"}});
          t["bias"] = RandomTensor(dt, {ch}, -1, 1, seed++);
        }
        auto op =
            MakeOp("group_norm", in,
                   {{"Y", {"y"}}, {"Mean", {"mean"}}, {"Variance", {"var"}}},
                   {{"groups", int32_t{c.groups}}, {"data_layout", c.layout}});
        testing::CudaCheckOptions opt;
        if (dt == DataType::kFloat32) opt.tolerance = 1e-4;
        EXPECT_TRUE(CudaMatchesCpu(op, t, opt))
            << DataTypeName(dt) << " " << c.x << " " << c.layout << " params "
            << params;
      }
    }
  }
}

}  // namespace
}  // namespace fluid
