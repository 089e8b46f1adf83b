// fill_constant_batch_size_like: the batch dim taken from Input at run
// time, every dtype, compile-time shapes, no gradient op, errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc FillLike(const std::vector<int64_t>& shape, float value,
                       DataType dtype, int in_idx = 0, int out_idx = 0) {
  return MakeOp("fill_constant_batch_size_like", {{"Input", {"x"}}},
                {{"Out", {"out"}}},
                {{"shape", shape},
                 {"value", value},
                 {"dtype", static_cast<int32_t>(dtype)},
                 {"input_dim_idx", int32_t{in_idx}},
                 {"output_dim_idx", int32_t{out_idx}}});
}

TEST(FillConstantBatchSizeLikeOp, TakesTheBatchFromInput) {
  Tensor x = RandomTensor<double>({5, 3}, -1, 1, 1);
  Tensor out =
      RunOp(FillLike({-1, 4}, 2.5f, DataType::kFloat32), {{"x", x}})["out"];
  EXPECT_EQ(out.shape(), Shape({5, 4}));
  for (float v : ToVector<float>(out)) ASSERT_EQ(v, 2.5f);
  // Input dim 1 into output dim 2; an int64 output from a double input.
  out = RunOp(FillLike({2, 2, 1}, 7.0f, DataType::kInt64, 1, 2),
              {{"x", x}})["out"];
  EXPECT_EQ(out.shape(), Shape({2, 2, 3}));
  for (int64_t v : ToVector<int64_t>(out)) ASSERT_EQ(v, 7);
  out = RunOp(FillLike({-1}, -1.5f, DataType::kFloat64), {{"x", x}})["out"];
  EXPECT_EQ(ToVector<double>(out), std::vector<double>(5, -1.5));
}

TEST(FillConstantBatchSizeLikeOp, CompileTimeShapeAndNoGradient) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape({-1, 7}));
  InferShapeAtCompileTime(FillLike({1, 3}, 0.0f, DataType::kFloat32), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "out")), Shape({-1, 3}));
  EXPECT_FALSE(
      OpRegistry::Global().Get("fill_constant_batch_size_like").has_grad());
}

TEST(FillConstantBatchSizeLikeOp, BadIndicesNameTheAttr) {
  Tensor x = RandomTensor<double>({5, 3}, -1, 1, 1);
  std::string msg =
      ErrorOf(FillLike({-1, 4}, 0.0f, DataType::kFloat32, 2, 0), {{"x", x}});
  EXPECT_NE(msg.find("input_dim_idx=2"), std::string::npos) << msg;
  msg = ErrorOf(FillLike({-1, 4}, 0.0f, DataType::kFloat32, 0, 2), {{"x", x}});
  EXPECT_NE(msg.find("output_dim_idx=2"), std::string::npos) << msg;
  msg = ErrorOf(FillLike({-1, -1}, 0.0f, DataType::kFloat32), {{"x", x}});
  EXPECT_NE(msg.find("must be known"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
