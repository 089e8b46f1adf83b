#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/backward.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

std::vector<std::string> OutNames(size_t n) {
  std::vector<std::string> outs;
  for (size_t i = 0; i < n; ++i) outs.push_back("out" + std::to_string(i));
  return outs;
}

proto::OpDesc SplitNum(int num, int axis) {
  return MakeOp("split", {{"X", {"x"}}}, {{"Out", OutNames(num)}},
                {{"axis", int32_t{axis}}, {"num", int32_t{num}}});
}

proto::OpDesc SplitSections(const std::vector<int32_t>& sections, int axis) {
  return MakeOp("split", {{"X", {"x"}}}, {{"Out", OutNames(sections.size())}},
                {{"axis", int32_t{axis}}, {"sections", sections}});
}

// x[outer, begin:end, inner] of a row-major double tensor, naively.
std::vector<double> Slice(const Tensor& x, int axis, int64_t begin,
                          int64_t end) {
  const Shape& s = x.shape();
  const int64_t outer = s.Product(0, axis), dim = s[axis];
  const int64_t inner = s.Product(axis + 1, s.rank());
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = begin; a < end; ++a)
      for (int64_t in = 0; in < inner; ++in)
        out.push_back(x.data<double>()[(o * dim + a) * inner + in]);
  return out;
}

void ExpectPieces(const proto::OpDesc& op, const Tensor& x, int axis,
                  const std::vector<int64_t>& sizes) {
  auto outs = RunOp(op, {{"x", x}});
  int64_t begin = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Tensor& t = outs["out" + std::to_string(i)];
    Shape want = x.shape();
    want[axis] = sizes[i];
    EXPECT_EQ(t.shape(), want) << i;
    EXPECT_EQ(ToVector<double>(t), Slice(x, axis, begin, begin + sizes[i]))
        << i;
    begin += sizes[i];
  }
}

TEST(SplitOp, EqualPieces) {
  Tensor x = RandomTensor<double>({4, 6, 3}, -1, 1, 1);
  ExpectPieces(SplitNum(2, 0), x, 0, {2, 2});
  ExpectPieces(SplitNum(3, 1), x, 1, {2, 2, 2});
  ExpectPieces(SplitNum(3, -1), x, 2, {1, 1, 1});
  ExpectPieces(SplitNum(1, 1), x, 1, {6});
}

TEST(SplitOp, Sections) {
  Tensor x = RandomTensor<double>({4, 6, 3}, -1, 1, 2);
  ExpectPieces(SplitSections({1, 3}, 0), x, 0, {1, 3});
  ExpectPieces(SplitSections({2, -1, 1}, 1), x, 1, {2, 3, 1});
  ExpectPieces(SplitSections({0, 6}, 1), x, 1, {0, 6});
  ExpectPieces(SplitSections({2, 1}, -1), x, 2, {2, 1});
}

TEST(SplitOp, Gradient) {
  Tensor x = RandomTensor<double>({4, 6, 3}, -1, 1, 3);
  EXPECT_TRUE(CheckGradient(SplitNum(2, 0), {{"x", x}}));
  EXPECT_TRUE(CheckGradient(SplitSections({2, -1, 1}, 1), {{"x", x}}));
  EXPECT_TRUE(CheckGradient(SplitSections({1, 2}, 2), {{"x", x}}));
}

// Only one piece reaches the loss: the others' gradients are zero-filled.
TEST(SplitOp, GradientOfOnePiece) {
  Tensor x = RandomTensor<double>({3, 5}, -1, 1, 4);
  testing::GradCheckOptions o;
  o.of = {"out1"};
  EXPECT_TRUE(CheckGradient(SplitSections({2, 3}, 1), {{"x", x}}, o));
}

TEST(SplitOp, GradIsConcat) {
  auto grads =
      OpRegistry::Global().Get("split").grad_maker()(SplitSections({2, -1}, 1));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "concat");
  EXPECT_EQ(OpInput(grads[0], "X"),
            (std::vector<std::string>{"out0@GRAD", "out1@GRAD"}));
  EXPECT_EQ(OpOutput(grads[0], "Out"), std::vector<std::string>{"x@GRAD"});
  EXPECT_EQ(GetOpAttrAs<int32_t>(grads[0], "axis"), 1);
}

TEST(SplitOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{-1, 6});
  InferShapeAtCompileTime(SplitSections({2, -1}, 1), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out0")), Shape({-1, 2}));
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out1")), Shape({-1, 4}));
  InferShapeAtCompileTime(SplitNum(2, 0), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out1")), Shape({-1, 6}));
}

TEST(SplitOp, BadSplitsNameX) {
  Tensor x = RandomTensor<double>({4, 6}, -1, 1, 5);
  std::string msg = ErrorOf(SplitNum(4, 1), {{"x", x}});
  EXPECT_NE(msg.find("split"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
  msg = ErrorOf(SplitSections({2, 2}, 1), {{"x", x}});
  EXPECT_NE(msg.find("add up to 4"), std::string::npos) << msg;
  msg = ErrorOf(SplitSections({-1, -1}, 1), {{"x", x}});
  EXPECT_NE(msg.find("-1"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
