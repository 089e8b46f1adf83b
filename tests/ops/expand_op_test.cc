#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc Expand(const std::vector<int32_t>& times) {
  return MakeOp("expand", {{"X", {"x"}}}, {{"Out", {"out"}}},
                {{"expand_times", times}});
}

TEST(ExpandOp, Tiles) {
  Tensor x = MakeTensor<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor out = RunOp(Expand({2, 2}), {{"x", x}})["out"];
  EXPECT_EQ(out.shape(), Shape({4, 6}));
  EXPECT_EQ(ToVector<double>(out),
            (std::vector<double>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6,
                                 1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  auto ids = RunOp(Expand({3}), {{"x", MakeTensor<int64_t>({2}, {7, -1})}});
  EXPECT_EQ(ToVector<int64_t>(ids["out"]),
            (std::vector<int64_t>{7, -1, 7, -1, 7, -1}));
}

// Each output element against the X element its index modulo X's dims
// names.
TEST(ExpandOp, ForwardMatchesNaive) {
  Tensor x = RandomTensor<double>({2, 1, 3}, -1, 1, 2);
  Tensor out = RunOp(Expand({2, 4, 1}), {{"x", x}})["out"];
  ASSERT_EQ(out.shape(), Shape({4, 4, 3}));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 3; ++k)
        EXPECT_EQ(out.data<double>()[(i * 4 + j) * 3 + k],
                  x.data<double>()[(i % 2) * 3 + k]);
}

TEST(ExpandOp, Gradient) {
  uint64_t seed = 3;
  for (const auto& [shape, times] :
       std::vector<std::pair<Shape, std::vector<int32_t>>>{
           {{3}, {4}}, {{2, 3}, {1, 2}}, {{2, 1, 3}, {2, 3, 1}}}) {
    EXPECT_TRUE(CheckGradient(
        Expand(times), {{"x", RandomTensor<double>(shape, -1, 1, seed++)}}))
        << shape;
  }
}

TEST(ExpandOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{-1, 3});
  InferShapeAtCompileTime(Expand({2, 2}), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({-1, 6}));
}

TEST(ExpandOp, BadTimesNameTheOpAndX) {
  Tensor x = RandomTensor<double>({2, 3}, -1, 1, 4);
  for (const auto& times :
       std::vector<std::vector<int32_t>>{{2}, {1, 0}, {1, -2}, {1, 1, 1}}) {
    std::string msg = ErrorOf(Expand(times), {{"x", x}});
    EXPECT_NE(msg.find("expand: attr expand_times"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fluid
