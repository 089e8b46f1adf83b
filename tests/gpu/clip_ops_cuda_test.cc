// The CUDA kernels of clip (and its gradient), sign, squared_l2_norm (and
// its gradient), clip_by_norm, increment, floor and cos (and its gradient)
// against their CPU kernels, float32 and float64, from one element to
// several hundred blocks. Every test skips, saying why, without a CUDA
// build or a visible device.
#include <gtest/gtest.h>

#include "src/framework/op_registry.h"
#include "tests/testing/cuda_op_check.h"
#include "tests/testing/optimizer_ops.h"

namespace fluid {
namespace {

using testing::CudaCheckOptions;
using testing::CudaMatchesCpu;
using testing::FilledTensor;
using testing::kFloatTypes;
using testing::OptimizerShapes;
using testing::RandomTensor;

proto::OpDesc Unary(const std::string& type, const AttributeMap& attrs = {}) {
  return MakeOp(type, {{"X", {"x"}}}, {{"Out", {"y"}}}, attrs);
}

TEST(ClipOpsCuda, ElementwiseAndNorms) {
  REQUIRE_GPU();
  uint64_t seed = 500;
  const std::vector<std::pair<proto::OpDesc, bool>> ops = {
      {Unary("clip", {{"min", -0.3f}, {"max", 0.6f}}), true},
      {Unary("sign"), false},
      {Unary("squared_l2_norm"), true},
      {Unary("clip_by_norm", {{"max_norm", 0.5f}}), false},
      {Unary("clip_by_norm", {{"max_norm", 1e6f}}), false},
      {Unary("floor"), false},
      {Unary("cos"), true}};
  for (const auto& [op, grad] : ops) {
    for (DataType dt : kFloatTypes) {
      for (const Shape& s : OptimizerShapes()) {
        CudaCheckOptions o;
        o.grad = grad;
        EXPECT_TRUE(
            CudaMatchesCpu(op, {{"x", RandomTensor(dt, s, -2, 2, ++seed)}}, o))
            << op.type() << " " << DataTypeName(dt) << " " << s;
      }
    }
  }
}

TEST(ClipOpsCuda, Increment) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    CudaCheckOptions o;
    o.grad = false;
    EXPECT_TRUE(CudaMatchesCpu(Unary("increment", {{"step", 3.0f}}),
                               {{"x", FilledTensor(dt, {1}, 41)}}, o))
        << DataTypeName(dt);
  }
}

}  // namespace
}  // namespace fluid
