// The CUDA kernels of layer_norm (one block per row; one thread per column
// for the parameter gradients) against its CPU kernels: forward, Mean,
// Variance and every gradient, with and without Scale and Bias, rows from 1
// to 1000 elements; float32 and float64. Every test skips, saying why,
// without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::RandomTensor;

template <typename T>
void CheckLayerNorm() {
  struct Case {
    Shape shape;
    int axis;
  };
  const std::vector<Case> cases = {
      {{1, 1}, 1},    {{3, 7}, 1},    {{2, 3, 5}, 2},   {{2, 3, 5}, 1},
      {{4, 1000}, 1}, {{300, 33}, 1}, {{2, 2, 3, 4}, 0}};
  uint64_t seed = 500;
  for (const Case& c : cases) {
    const int64_t cols = c.shape.Product(c.axis, c.shape.rank());
    for (int params = 0; params < 4; ++params) {
      SCOPED_TRACE(::testing::Message()
                   << c.shape << " axis=" << c.axis << " params=" << params);
      std::vector<std::pair<std::string, std::vector<std::string>>> in = {
          {"X", {"x"}}};
      testing::TensorMap t = {{"x", RandomTensor<T>(c.shape, -3, 3, seed++)}};
      if (params & 1) {
        in.push_back({"Scale", {"scale"}});
        t["scale"] = RandomTensor<T>({cols}, 0.5, 2, seed++);
      }
      if (params & 2) {
        in.push_back({"Bias", {"bias"}});
        t["bias"] = RandomTensor<T>({cols}, -1, 1, seed++);
      }
      auto op =
          MakeOp("layer_norm", in,
                 {{"Y", {"y"}}, {"Mean", {"mean"}}, {"Variance", {"var"}}},
                 {{"begin_norm_axis", int32_t{c.axis}}});
      testing::CudaCheckOptions opt;
      if (sizeof(T) == 4) opt.tolerance = 1e-4;  // sums over 1000 in float
      EXPECT_TRUE(CudaMatchesCpu(op, t, opt));
    }
  }
}

TEST(LayerNormOpCuda, Float) {
  REQUIRE_GPU();
  CheckLayerNorm<float>();
}

TEST(LayerNormOpCuda, Double) {
  REQUIRE_GPU();
  CheckLayerNorm<double>();
}

}  // namespace
}  // namespace fluid
