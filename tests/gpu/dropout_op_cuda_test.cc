// The CUDA kernels of dropout against its CPU kernels: the same mask to the
// bit (tolerance 0), both implementations, training and inference, the
// step counter advanced on the device. Every test skips, saying why, without
// a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <string>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaCheckOptions;
using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::MakeTensor;
using testing::RandomTensor;

TEST(DropoutOpCuda, SameMaskToTheBit) {
  REQUIRE_GPU();
  CudaCheckOptions exact;
  exact.tolerance = 0;
  uint64_t seed = 400;
  for (DataType dt : kFloatTypes) {
    for (const char* impl : {"downgrade_in_infer", "upscale_in_train"}) {
      for (bool is_test : {false, true}) {
        auto op = MakeOp(
            "dropout", {{"X", {"x"}}, {"Step", {"step"}}},
            {{"Out", {"out"}}, {"Mask", {"mask"}}, {"StepOut", {"step"}}},
            {{"dropout_prob", 0.35f},
             {"seed", 17},
             {"is_test", is_test},
             {"dropout_implementation", std::string(impl)}});
        EXPECT_TRUE(CudaMatchesCpu(
            op,
            {{"x", RandomTensor(dt, Shape({3, 70001}), -1, 1, seed++)},
             {"step", MakeTensor<int64_t>(Shape({1}), {12345})}},
            exact))
            << DataTypeName(dt) << " " << impl << " is_test " << is_test;
      }
    }
  }
}

// A recompute replay drawing the mask alone (no Out): the same mask too.
TEST(DropoutOpCuda, AReplaysMaskAloneToTheBit) {
  REQUIRE_GPU();
  CudaCheckOptions exact;
  exact.tolerance = 0;
  exact.grad = false;  // the replay's gradient op reads the mask it draws
  uint64_t seed = 500;
  for (DataType dt : kFloatTypes) {
    for (bool is_test : {false, true}) {
      auto op = MakeOp("dropout", {{"X", {"x"}}, {"Step", {"step"}}},
                       {{"Mask", {"mask"}}},
                       {{"dropout_prob", 0.35f},
                        {"seed", 17},
                        {"is_test", is_test},
                        {"replay_of", std::string("out")},
                        {"replay_step", int32_t{-1}}});
      EXPECT_TRUE(CudaMatchesCpu(
          op,
          {{"x", RandomTensor(dt, Shape({3, 70001}), -1, 1, seed++)},
           {"step", MakeTensor<int64_t>(Shape({1}), {12345})}},
          exact))
          << DataTypeName(dt) << " is_test " << is_test;
    }
  }
}

}  // namespace
}  // namespace fluid
