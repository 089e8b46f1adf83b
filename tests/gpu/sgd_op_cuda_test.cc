// The CUDA kernel of sgd against its CPU kernel: several steps on
// persistable state updated in place, float32 and float64, the learning
// rate in either float type; and ParamOut a var of its own. Every test
// skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/optimizer_ops.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::CudaStepsMatchCpu;
using testing::FilledTensor;
using testing::kFloatTypes;
using testing::OptimizerShapes;
using testing::RandomGrads;
using testing::RandomTensor;
using testing::SgdOp;
using testing::TensorMap;

TEST(SgdOpCuda, Steps) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  for (DataType dt : kFloatTypes) {
    for (DataType lr_dt : kFloatTypes) {
      for (const Shape& s : OptimizerShapes()) {
        seed += 10;
        TensorMap state = {{"p", RandomTensor(dt, s, -1, 1, seed)},
                           {"lr", FilledTensor(lr_dt, {1}, 0.05)}};
        EXPECT_TRUE(CudaStepsMatchCpu(SgdOp(), state, "g",
                                      RandomGrads(dt, s, 4, seed + 1)))
            << DataTypeName(dt) << " lr " << DataTypeName(lr_dt) << " " << s;
      }
    }
  }
}

// ParamOut a var of its own.
TEST(SgdOpCuda, OutOfPlace) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    TensorMap in = {{"p", RandomTensor(dt, {5, 7}, -1, 1, 3)},
                    {"g", RandomTensor(dt, {5, 7}, -1, 1, 4)},
                    {"lr", FilledTensor(DataType::kFloat32, {1}, 0.25)}};
    EXPECT_TRUE(CudaMatchesCpu(SgdOp("_out"), in)) << DataTypeName(dt);
  }
}

}  // namespace
}  // namespace fluid
