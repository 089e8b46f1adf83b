// The CUDA kernel of adam against its CPU kernel: several steps on
// persistable state updated in place, Adam and AdamW, with and without
// decay, float32 and float64, the learning rate and beta powers stored in
// either float type; an empty parameter; outputs in vars of their own.
// Every test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <string>

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
using testing::TensorMap;

proto::OpDesc AdamOp(float wd, bool decoupled, const std::string& suffix = "") {
  return testing::AdamOp({{"beta1", 0.9f},
                          {"beta2", 0.999f},
                          {"epsilon", 1e-8f},
                          {"weight_decay", wd},
                          {"decoupled_weight_decay", decoupled}},
                         suffix);
}

TensorMap AdamState(DataType dt, DataType scalar_dt, const Shape& s,
                    uint64_t seed) {
  return {{"p", RandomTensor(dt, s, -1, 1, seed)},
          {"m1", FilledTensor(dt, s, 0)},
          {"m2", FilledTensor(dt, s, 0)},
          {"lr", FilledTensor(scalar_dt, {1}, 0.01)},
          {"b1p", FilledTensor(scalar_dt, {1}, 0.9f)},
          {"b2p", FilledTensor(scalar_dt, {1}, 0.999f)}};
}

// Adam (L2 in the gradient) and AdamW (decoupled decay), with and without
// decay. The beta powers are updated in place by the same launch that reads
// them; on the larger shapes hundreds of blocks read them first.
TEST(AdamOpCuda, Steps) {
  REQUIRE_GPU();
  uint64_t seed = 200;
  for (DataType dt : kFloatTypes) {
    for (DataType scalar_dt : kFloatTypes) {
      for (bool decoupled : {false, true}) {
        for (float wd : {0.0f, 0.01f}) {
          for (const Shape& s : OptimizerShapes()) {
            seed += 10;
            EXPECT_TRUE(CudaStepsMatchCpu(AdamOp(wd, decoupled),
                                          AdamState(dt, scalar_dt, s, seed),
                                          "g", RandomGrads(dt, s, 5, seed + 1)))
                << DataTypeName(dt) << " scalars " << DataTypeName(scalar_dt)
                << " decoupled " << decoupled << " wd " << wd << " " << s;
          }
        }
      }
    }
  }
}

// The learning rate in one float type and the powers in the other.
TEST(AdamOpCuda, MixedScalarTypes) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    TensorMap state = AdamState(dt, DataType::kFloat32, {40, 9}, 5);
    state["lr"] = FilledTensor(DataType::kFloat64, {1}, 0.003);
    state["b2p"] = FilledTensor(DataType::kFloat64, {1}, 0.999f);
    EXPECT_TRUE(CudaStepsMatchCpu(AdamOp(0.1f, false), state, "g",
                                  RandomGrads(dt, {40, 9}, 3, 50)))
        << DataTypeName(dt);
  }
}

// An empty parameter still advances the beta powers.
TEST(AdamOpCuda, EmptyParam) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    EXPECT_TRUE(CudaStepsMatchCpu(AdamOp(0.0f, false),
                                  AdamState(dt, DataType::kFloat32, {0, 3}, 1),
                                  "g", RandomGrads(dt, {0, 3}, 2, 9)))
        << DataTypeName(dt);
  }
}

// Every output in a var of its own, from non-zero moments at step 4.
TEST(AdamOpCuda, OutOfPlace) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    for (bool decoupled : {false, true}) {
      TensorMap in = {
          {"p", RandomTensor(dt, {8, 33}, -1, 1, 11)},
          {"g", RandomTensor(dt, {8, 33}, -1, 1, 12)},
          {"m1", RandomTensor(dt, {8, 33}, -1, 1, 13)},
          {"m2", RandomTensor(dt, {8, 33}, 0, 1, 14)},
          {"lr", FilledTensor(DataType::kFloat32, {1}, 0.01)},
          {"b1p", FilledTensor(DataType::kFloat64, {1}, 0.9 * 0.9 * 0.9)},
          {"b2p", FilledTensor(DataType::kFloat32, {1}, 0.997)}};
      EXPECT_TRUE(CudaMatchesCpu(AdamOp(0.05f, decoupled, "_out"), in))
          << DataTypeName(dt) << " decoupled " << decoupled;
    }
  }
}

}  // namespace
}  // namespace fluid
