// The bfloat16 and float16 kernels of the data-movement ops on the AMP gray
// list (squeeze2, unsqueeze2, stack, unstack, slice and their gradients):
// they move elements without arithmetic, so each output equals the
// float32 kernel's on the same (16-bit representable) values exactly.
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/half_tensors.h"

namespace fluid {
namespace {

using testing::Converted;
using testing::FloatAt;
using testing::RandomOf;
using testing::RunOp;
using testing::TensorMap;

// Runs `op` on `inputs` in `dtype` and in float32; every output must hold
// the same values.
void ExpectExact(const proto::OpDesc& op, const TensorMap& inputs,
                 DataType dtype) {
  TensorMap low, f32;
  for (const auto& [name, t] : inputs) {
    low[name] = Converted(t, dtype);
    f32[name] = Converted(t, DataType::kFloat32);
  }
  TensorMap got = RunOp(op, low), want = RunOp(op, f32);
  for (const auto& [name, w] : want) {
    if (inputs.count(name)) continue;
    const Tensor& g = got.at(name);
    ASSERT_EQ(g.shape(), w.shape()) << op.type() << " " << name;
    if (w.numel() > 0) {
      ASSERT_EQ(g.dtype(), dtype) << op.type() << " " << name;
    }
    for (int64_t i = 0; i < w.numel(); ++i)
      ASSERT_EQ(FloatAt(g, i), FloatAt(w, i)) << op.type() << " " << name;
  }
}

TEST(HalfDataMovementOps, EqualFloat32Exactly) {
  for (DataType dt : {DataType::kBFloat16, DataType::kFloat16}) {
    const Tensor x = RandomOf(dt, {3, 1, 4}, 1);
    ExpectExact(MakeOp("squeeze2", {{"X", {"x"}}},
                       {{"Out", {"out"}}, {"XShape", {"xs"}}},
                       {{"axes", std::vector<int32_t>{1}}}),
                {{"x", x}}, dt);
    ExpectExact(
        MakeOp("unsqueeze2_grad", {{"XShape", {"xs"}}, {"Out@GRAD", {"g"}}},
               {{"X@GRAD", {"dx"}}}),
        {{"xs", RandomOf(dt, {0, 3, 4}, 2)}, {"g", RandomOf(dt, {3, 1, 4}, 3)}},
        dt);
    ExpectExact(
        MakeOp("stack", {{"X", {"a", "b"}}}, {{"Y", {"y"}}}, {{"axis", 1}}),
        {{"a", x}, {"b", RandomOf(dt, {3, 1, 4}, 4)}}, dt);
    ExpectExact(MakeOp("unstack", {{"X", {"x"}}}, {{"Y", {"p", "q", "r"}}},
                       {{"axis", 0}, {"num", 3}}),
                {{"x", x}}, dt);
    const AttributeMap slice = {{"axes", std::vector<int32_t>{0, 2}},
                                {"starts", std::vector<int32_t>{1, -3}},
                                {"ends", std::vector<int32_t>{INT_MAX, 3}}};
    ExpectExact(MakeOp("slice", {{"Input", {"x"}}}, {{"Out", {"out"}}}, slice),
                {{"x", x}}, dt);
    ExpectExact(MakeOp("slice_grad", {{"Input", {"x"}}, {"Out@GRAD", {"g"}}},
                       {{"Input@GRAD", {"dx"}}}, slice),
                {{"x", x}, {"g", RandomOf(dt, {2, 1, 2}, 5)}}, dt);
  }
}

}  // namespace
}  // namespace fluid
