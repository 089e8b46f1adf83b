// The CUDA kernels of adagrad, decayed_adagrad, rmsprop, adamax, adadelta
// and lars_momentum against their CPU kernels: several steps on persistable
// state updated in place, float32 and float64, the learning rate in either
// float type, sizes from one element to several hundred blocks; and outputs
// in vars of their own. Every test skips, saying why, without a CUDA build
// or a visible device.
#include <gtest/gtest.h>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/optimizer_ops.h"
#include "tests/testing/state_optimizer_ops.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::CudaStepsMatchCpu;
using testing::FilledTensor;
using testing::kFloatTypes;
using testing::OptimizerShapes;
using testing::RandomGrads;
using testing::RandomTensor;
using testing::StateOptimizerOp;
using testing::StateVar;
using testing::TensorMap;

struct Case {
  std::string type;
  std::vector<std::string> slots;
  AttributeMap attrs;
};

std::vector<Case> Cases() {
  return {
      {"adagrad", {"Moment"}, {{"epsilon", 1e-6f}}},
      {"decayed_adagrad", {"Moment"}, {{"decay", 0.9f}, {"epsilon", 1e-6f}}},
      {"rmsprop",
       {"Moment", "MeanSquare", "MeanGrad"},
       {{"decay", 0.9f}, {"momentum", 0.5f}, {"centered", false}}},
      {"rmsprop",
       {"Moment", "MeanSquare", "MeanGrad"},
       {{"decay", 0.9f}, {"momentum", 0.0f}, {"centered", true}}},
      {"adamax", {"Moment", "InfNorm"}, {}},
      {"adadelta", {"AvgSquaredGrad", "AvgSquaredUpdate"}, {}},
      {"lars_momentum", {"Velocity"}, {{"mu", 0.9f}}},
  };
}

TensorMap State(const Case& c, DataType dt, DataType lr_dt, const Shape& s,
                uint64_t seed) {
  TensorMap state = {{"p", RandomTensor(dt, s, -1, 1, seed)},
                     {"lr", FilledTensor(lr_dt, {1}, 0.01)},
                     {"b1p", FilledTensor(lr_dt, {1}, 0.9)}};
  for (const auto& slot : c.slots)
    state[StateVar(slot)] = FilledTensor(dt, s, 0);
  return state;
}

TEST(StateOptimizerOpsCuda, Steps) {
  REQUIRE_GPU();
  uint64_t seed = 300;
  for (const Case& c : Cases()) {
    for (DataType dt : kFloatTypes) {
      for (DataType lr_dt : kFloatTypes) {
        for (const Shape& s : OptimizerShapes()) {
          seed += 10;
          EXPECT_TRUE(
              CudaStepsMatchCpu(StateOptimizerOp(c.type, c.slots, c.attrs),
                                State(c, dt, lr_dt, s, seed), "g",
                                RandomGrads(dt, s, 4, seed + 1)))
              << c.type << " " << DataTypeName(dt) << " lr "
              << DataTypeName(lr_dt) << " " << s;
        }
      }
    }
  }
}

TEST(StateOptimizerOpsCuda, OutOfPlace) {
  REQUIRE_GPU();
  for (const Case& c : Cases()) {
    for (DataType dt : kFloatTypes) {
      TensorMap in = State(c, dt, DataType::kFloat64, {6, 5}, 7);
      in["g"] = RandomTensor(dt, {6, 5}, -1, 1, 8);
      // Positive running means; a small mean gradient keeps the centered
      // variance positive.
      for (const auto& slot : c.slots)
        in[StateVar(slot)] = slot == "MeanGrad"
                                 ? RandomTensor(dt, {6, 5}, -0.1, 0.1, 9)
                                 : RandomTensor(dt, {6, 5}, 0.1, 1, 9);
      EXPECT_TRUE(CudaMatchesCpu(
          StateOptimizerOp(c.type, c.slots, c.attrs, "_out"), in))
          << c.type << " " << DataTypeName(dt);
    }
  }
}

}  // namespace
}  // namespace fluid
