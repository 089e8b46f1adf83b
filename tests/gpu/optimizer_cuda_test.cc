// The CUDA kernels of sgd, momentum and adam against their CPU kernels:
// several steps on persistable state, updated in place as the optimizer
// builds them, float32 and float64, with the learning rate and beta powers
// stored in either float type, and every optional attr. Every test skips,
// saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/gpu/cuda_op_check.h"
#include "tests/testing/optimizer_ops.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::CudaStepsMatchCpu;
using testing::MakeTensor;
using testing::MomentumOp;
using testing::RandomTensor;
using testing::SgdOp;
using testing::TensorMap;

const DataType kFloatTypes[] = {DataType::kFloat32, DataType::kFloat64};

// Sizes from one element to several hundred blocks.
const std::vector<Shape>& Shapes() {
  static const std::vector<Shape> shapes = {Shape({1}), Shape({3, 4}),
                                            Shape({1000, 301})};
  return shapes;
}

Tensor Random(DataType dtype, const Shape& shape, uint64_t seed, double lo = -1,
              double hi = 1) {
  if (dtype == DataType::kFloat64)
    return RandomTensor<double>(shape, lo, hi, seed);
  return RandomTensor<float>(shape, lo, hi, seed);
}

Tensor Zeros(DataType dtype, const Shape& shape) {
  const size_t n = static_cast<size_t>(shape.numel());
  if (dtype == DataType::kFloat64)
    return MakeTensor<double>(shape, std::vector<double>(n, 0.0));
  return MakeTensor<float>(shape, std::vector<float>(n, 0.0f));
}

Tensor Scalar(DataType dtype, double v) {
  if (dtype == DataType::kFloat64) return MakeTensor<double>({1}, {v});
  return MakeTensor<float>({1}, {static_cast<float>(v)});
}

std::vector<Tensor> Grads(DataType dtype, const Shape& shape, int steps,
                          uint64_t seed) {
  std::vector<Tensor> grads;
  for (int i = 0; i < steps; ++i)
    grads.push_back(Random(dtype, shape, seed + i));
  return grads;
}

// ---- sgd ----

TEST(OptimizerCuda, SgdSteps) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  for (DataType dt : kFloatTypes) {
    for (DataType lr_dt : kFloatTypes) {
      for (const Shape& s : Shapes()) {
        seed += 10;
        TensorMap state = {{"p", Random(dt, s, seed)},
                           {"lr", Scalar(lr_dt, 0.05)}};
        EXPECT_TRUE(
            CudaStepsMatchCpu(SgdOp(), state, "g", Grads(dt, s, 4, seed + 1)))
            << DataTypeName(dt) << " lr " << DataTypeName(lr_dt) << " " << s;
      }
    }
  }
}

// ParamOut a var of its own.
TEST(OptimizerCuda, SgdOutOfPlace) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    TensorMap in = {{"p", Random(dt, {5, 7}, 3)},
                    {"g", Random(dt, {5, 7}, 4)},
                    {"lr", Scalar(DataType::kFloat32, 0.25)}};
    EXPECT_TRUE(CudaMatchesCpu(SgdOp("_out"), in)) << DataTypeName(dt);
  }
}

// ---- momentum ----

TEST(OptimizerCuda, MomentumSteps) {
  REQUIRE_GPU();
  uint64_t seed = 100;
  for (DataType dt : kFloatTypes) {
    for (DataType lr_dt : kFloatTypes) {
      for (bool nesterov : {false, true}) {
        for (float wd : {0.0f, 0.01f}) {
          for (const Shape& s : Shapes()) {
            seed += 10;
            TensorMap state = {{"p", Random(dt, s, seed)},
                               {"v", Zeros(dt, s)},
                               {"lr", Scalar(lr_dt, 0.1)}};
            EXPECT_TRUE(CudaStepsMatchCpu(MomentumOp(0.9f, nesterov, wd), state,
                                          "g", Grads(dt, s, 5, seed + 1)))
                << DataTypeName(dt) << " lr " << DataTypeName(lr_dt)
                << " nesterov " << nesterov << " wd " << wd << " " << s;
          }
        }
      }
    }
  }
}

// Outputs in vars of their own, from a non-zero velocity.
TEST(OptimizerCuda, MomentumOutOfPlace) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    for (bool nesterov : {false, true}) {
      TensorMap in = {{"p", Random(dt, {6, 5}, 7)},
                      {"g", Random(dt, {6, 5}, 8)},
                      {"v", Random(dt, {6, 5}, 9)},
                      {"lr", Scalar(DataType::kFloat64, 0.2)}};
      EXPECT_TRUE(CudaMatchesCpu(MomentumOp(0.5f, nesterov, 0.1f, "_out"), in))
          << DataTypeName(dt) << " nesterov " << nesterov;
    }
  }
}

// ---- adam ----

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
  return {{"p", Random(dt, s, seed)},
          {"m1", Zeros(dt, s)},
          {"m2", Zeros(dt, s)},
          {"lr", Scalar(scalar_dt, 0.01)},
          {"b1p", Scalar(scalar_dt, 0.9f)},
          {"b2p", Scalar(scalar_dt, 0.999f)}};
}

// Adam (L2 in the gradient) and AdamW (decoupled decay), with and without
// decay. The beta powers are updated in place by the same launch that reads
// them; on the larger shapes hundreds of blocks read them first.
TEST(OptimizerCuda, AdamSteps) {
  REQUIRE_GPU();
  uint64_t seed = 200;
  for (DataType dt : kFloatTypes) {
    for (DataType scalar_dt : kFloatTypes) {
      for (bool decoupled : {false, true}) {
        for (float wd : {0.0f, 0.01f}) {
          for (const Shape& s : Shapes()) {
            seed += 10;
            EXPECT_TRUE(CudaStepsMatchCpu(AdamOp(wd, decoupled),
                                          AdamState(dt, scalar_dt, s, seed),
                                          "g", Grads(dt, s, 5, seed + 1)))
                << DataTypeName(dt) << " scalars " << DataTypeName(scalar_dt)
                << " decoupled " << decoupled << " wd " << wd << " " << s;
          }
        }
      }
    }
  }
}

// The learning rate in one float type and the powers in the other.
TEST(OptimizerCuda, AdamMixedScalarTypes) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    TensorMap state = AdamState(dt, DataType::kFloat32, {40, 9}, 5);
    state["lr"] = Scalar(DataType::kFloat64, 0.003);
    state["b2p"] = Scalar(DataType::kFloat64, 0.999f);
    EXPECT_TRUE(CudaStepsMatchCpu(AdamOp(0.1f, false), state, "g",
                                  Grads(dt, {40, 9}, 3, 50)))
        << DataTypeName(dt);
  }
}

// An empty parameter still advances the beta powers.
TEST(OptimizerCuda, AdamEmptyParam) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    EXPECT_TRUE(CudaStepsMatchCpu(AdamOp(0.0f, false),
                                  AdamState(dt, DataType::kFloat32, {0, 3}, 1),
                                  "g", Grads(dt, {0, 3}, 2, 9)))
        << DataTypeName(dt);
  }
}

// Every output in a var of its own, from non-zero moments at step 4.
TEST(OptimizerCuda, AdamOutOfPlace) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    for (bool decoupled : {false, true}) {
      TensorMap in = {{"p", Random(dt, {8, 33}, 11)},
                      {"g", Random(dt, {8, 33}, 12)},
                      {"m1", Random(dt, {8, 33}, 13)},
                      {"m2", Random(dt, {8, 33}, 14, 0, 1)},
                      {"lr", Scalar(DataType::kFloat32, 0.01)},
                      {"b1p", Scalar(DataType::kFloat64, 0.9 * 0.9 * 0.9)},
                      {"b2p", Scalar(DataType::kFloat32, 0.997)}};
      EXPECT_TRUE(CudaMatchesCpu(AdamOp(0.05f, decoupled, "_out"), in))
          << DataTypeName(dt) << " decoupled " << decoupled;
    }
  }
}

}  // namespace
}  // namespace fluid
