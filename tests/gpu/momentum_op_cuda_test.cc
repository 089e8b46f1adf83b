// The CUDA kernel of momentum against its CPU kernel: several steps on
// persistable state updated in place, plain and Nesterov, with and without
// weight decay, float32 and float64, the learning rate in either float
// type; and outputs in vars of their own. Every test skips, saying why,
// without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/optimizer_ops.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::CudaStepsMatchCpu;
using testing::FilledTensor;
using testing::kFloatTypes;
using testing::MomentumOp;
using testing::OptimizerShapes;
using testing::RandomGrads;
using testing::RandomTensor;
using testing::TensorMap;

TEST(MomentumOpCuda, Steps) {
  REQUIRE_GPU();
  uint64_t seed = 100;
  for (DataType dt : kFloatTypes) {
    for (DataType lr_dt : kFloatTypes) {
      for (bool nesterov : {false, true}) {
        for (float wd : {0.0f, 0.01f}) {
          for (const Shape& s : OptimizerShapes()) {
            seed += 10;
            TensorMap state = {{"p", RandomTensor(dt, s, -1, 1, seed)},
                               {"v", FilledTensor(dt, s, 0)},
                               {"lr", FilledTensor(lr_dt, {1}, 0.1)}};
            EXPECT_TRUE(CudaStepsMatchCpu(MomentumOp(0.9f, nesterov, wd), state,
                                          "g", RandomGrads(dt, s, 5, seed + 1)))
                << DataTypeName(dt) << " lr " << DataTypeName(lr_dt)
                << " nesterov " << nesterov << " wd " << wd << " " << s;
          }
        }
      }
    }
  }
}

// Outputs in vars of their own, from a non-zero velocity.
TEST(MomentumOpCuda, OutOfPlace) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    for (bool nesterov : {false, true}) {
      TensorMap in = {{"p", RandomTensor(dt, {6, 5}, -1, 1, 7)},
                      {"g", RandomTensor(dt, {6, 5}, -1, 1, 8)},
                      {"v", RandomTensor(dt, {6, 5}, -1, 1, 9)},
                      {"lr", FilledTensor(DataType::kFloat64, {1}, 0.2)}};
      EXPECT_TRUE(CudaMatchesCpu(MomentumOp(0.5f, nesterov, 0.1f, "_out"), in))
          << DataTypeName(dt) << " nesterov " << nesterov;
    }
  }
}

}  // namespace
}  // namespace fluid
