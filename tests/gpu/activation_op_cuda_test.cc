// The CUDA kernels of every activation against its CPU kernels: forward
// and the generated grad op, with default and given attributes, on inputs
// inside each activation's domain, float32 and float64. Every test skips,
// saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

struct ActCase {
  std::string type;
  AttributeMap attrs;  // empty: the op's defaults
  double lo, hi;       // the input range
};

const std::vector<ActCase>& Cases() {
  static const std::vector<ActCase> cases = {
      {"relu", {}, -3, 3},
      {"sigmoid", {}, -6, 6},
      {"tanh", {}, -4, 4},
      {"leaky_relu", {}, -3, 3},
      {"leaky_relu", {{"alpha", 0.3f}}, -3, 3},
      {"elu", {}, -3, 3},
      {"elu", {{"alpha", 0.5f}}, -3, 3},
      {"relu6", {}, -2, 8},
      {"relu6", {{"threshold", 2.5f}}, -2, 4},
      {"brelu", {}, -3, 27},
      {"brelu", {{"t_min", -1.5f}, {"t_max", 2.0f}}, -3, 3},
      {"exp", {}, -3, 3},
      {"log", {}, 0.1, 5},
      {"sqrt", {}, 0.1, 5},
      {"square", {}, -3, 3},
      {"abs", {}, -3, 3},
      {"pow", {}, -3, 3},
      {"pow", {{"factor", 3.0f}}, -2, 2},
      {"pow", {{"factor", 0.5f}}, 0.1, 5},
      {"softplus", {}, -5, 5},
      {"softsign", {}, -4, 4},
  };
  return cases;
}

void CheckActivations(DataType dtype) {
  const std::vector<Shape> shapes = {{1}, {3, 7}, {2, 3, 5}, {70000}};
  uint64_t seed = 300;
  for (const ActCase& c : Cases()) {
    auto op = MakeOp(c.type, {{"X", {"x"}}}, {{"Out", {"out"}}}, c.attrs);
    for (const Shape& s : shapes) {
      EXPECT_TRUE(CudaMatchesCpu(
          op, {{"x", RandomTensor(dtype, s, c.lo, c.hi, seed++)}}))
          << c.type << " (" << c.attrs.size() << " attrs given) " << s;
    }
  }
}

TEST(ActivationOpCuda, Float) {
  REQUIRE_GPU();
  CheckActivations(DataType::kFloat32);
}

TEST(ActivationOpCuda, Double) {
  REQUIRE_GPU();
  CheckActivations(DataType::kFloat64);
}

}  // namespace
}  // namespace fluid
