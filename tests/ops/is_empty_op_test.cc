// is_empty against the element count of its input: bool [1], true exactly
// when a dim is 0, whatever the dtype; compile-time shape and dtype.
#include <gtest/gtest.h>

#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::MakeTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc IsEmpty() {
  return MakeOp("is_empty", {{"X", {"x"}}}, {{"Out", {"out"}}});
}

bool IsEmptyOf(const Tensor& x) {
  Tensor out = RunOp(IsEmpty(), {{"x", x}})["out"];
  EXPECT_EQ(out.dtype(), DataType::kBool);
  EXPECT_EQ(out.shape(), Shape({1}));
  return out.data<bool>()[0];
}

TEST(IsEmptyOp, TrueExactlyWithoutElements) {
  EXPECT_FALSE(IsEmptyOf(MakeTensor<float>({2, 3}, std::vector<float>(6, 1))));
  EXPECT_FALSE(IsEmptyOf(MakeTensor<int64_t>({1}, {0})));
  EXPECT_TRUE(IsEmptyOf(MakeTensor<float>({0, 3}, {})));
  EXPECT_TRUE(IsEmptyOf(MakeTensor<double>({4, 0}, {})));
  EXPECT_TRUE(IsEmptyOf(MakeTensor<int32_t>({0}, {})));
}

TEST(IsEmptyOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{-1, 5});
  InferShapeAtCompileTime(IsEmpty(), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({1}));
  EXPECT_EQ(VarDtype(GetVarDesc(*block, "out")), DataType::kBool);
}

}  // namespace
}  // namespace fluid
