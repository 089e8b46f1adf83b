#include <gtest/gtest.h>

#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc ShapeOp() {
  return MakeOp("shape", {{"Input", {"x"}}}, {{"Out", {"out"}}});
}

TEST(ShapeOp, Int32ShapeOfAnyDtype) {
  Tensor out = RunOp(ShapeOp(),
                     {{"x", RandomTensor<float>({2, 0, 7}, -1, 1, 1)}})["out"];
  EXPECT_EQ(out.dtype(), DataType::kInt32);
  EXPECT_EQ(ToVector<int32_t>(out), (std::vector<int32_t>{2, 0, 7}));
  out = RunOp(ShapeOp(), {{"x", MakeTensor<int64_t>({3}, {1, 2, 3})}})["out"];
  EXPECT_EQ(ToVector<int32_t>(out), (std::vector<int32_t>{3}));
}

TEST(ShapeOp, NoGradientAndCompileTimeShape) {
  EXPECT_FALSE(OpRegistry::Global().Get("shape").has_grad());
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat64, Shape{-1, 3, 5});
  InferShapeAtCompileTime(ShapeOp(), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({3}));
  EXPECT_EQ(VarDtype(GetVarDesc(*block, "out")), DataType::kInt32);
}

}  // namespace
}  // namespace fluid
