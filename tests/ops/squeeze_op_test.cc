#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::GradCheckOptions;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc Op(const std::string& type, const std::vector<int32_t>& axes) {
  return MakeOp(type, {{"X", {"x"}}}, {{"Out", {"out"}}, {"XShape", {"xs"}}},
                {{"axes", axes}});
}

struct Case {
  std::string type;
  Shape x;
  std::vector<int32_t> axes;
  Shape out;
};

std::vector<Case> Cases() {
  return {{"squeeze2", {3, 1, 4, 1}, {1}, {3, 4, 1}},
          {"squeeze2", {3, 1, 4, 1}, {-1, 1}, {3, 4}},
          {"squeeze2", {3, 1, 4, 1}, {}, {3, 4}},
          // A named dim not of size 1 stays (as Fluid 1.8 and torch).
          {"squeeze2", {3, 1, 4, 1}, {0, 3}, {3, 1, 4}},
          {"squeeze2", {1, 1}, {}, {}},
          {"unsqueeze2", {3, 4}, {0}, {1, 3, 4}},
          {"unsqueeze2", {3, 4}, {-1}, {3, 4, 1}},
          {"unsqueeze2", {3, 4}, {1, 3}, {3, 1, 4, 1}},
          // Each axis indexes the shape the axes before it made.
          {"unsqueeze2", {3, 4}, {0, 0}, {1, 1, 3, 4}},
          {"unsqueeze2", {3, 4}, {2, -1}, {3, 4, 1, 1}},
          {"unsqueeze2", {5}, {-2}, {1, 5}}};
}

TEST(SqueezeOp, ShapesAndValues) {
  uint64_t seed = 1;
  for (const Case& c : Cases()) {
    Tensor x = RandomTensor<double>(c.x, -1, 1, seed++);
    auto outs = RunOp(Op(c.type, c.axes), {{"x", x}});
    EXPECT_EQ(outs["out"].shape(), c.out) << c.type << " " << c.x;
    EXPECT_EQ(ToVector<double>(outs["out"]), ToVector<double>(x));
    Shape xshape({0});
    for (int64_t d : c.x) xshape.push_back(d);
    EXPECT_EQ(outs["xs"].shape(), xshape);
  }
}

TEST(SqueezeOp, AnyDtype) {
  std::vector<int64_t> ids = {4, -2, 7};
  auto out = RunOp(Op("unsqueeze2", {0}),
                   {{"x", MakeTensor<int64_t>({3}, ids)}})["out"];
  EXPECT_EQ(out.shape(), Shape({1, 3}));
  EXPECT_EQ(ToVector<int64_t>(out), ids);
  auto f = RunOp(Op("squeeze2", {}),
                 {{"x", MakeTensor<float>({1, 2}, {1.5f, 2.5f})}})["out"];
  EXPECT_EQ(ToVector<float>(f), (std::vector<float>{1.5f, 2.5f}));
}

TEST(SqueezeOp, Gradient) {
  uint64_t seed = 10;
  GradCheckOptions o;
  o.of = {"out"};
  for (const Case& c : Cases()) {
    if (c.out.rank() == 0) continue;
    EXPECT_TRUE(CheckGradient(Op(c.type, c.axes),
                              {{"x", RandomTensor<double>(c.x, -1, 1, seed++)}},
                              o))
        << c.type << " " << c.x;
  }
}

// The gradient reads XShape, not X: X may be freed after the forward op.
TEST(SqueezeOp, GradReadsXShapeOnly) {
  for (const char* type : {"squeeze2", "unsqueeze2"}) {
    auto grads = OpRegistry::Global().Get(type).grad_maker()(Op(type, {0}));
    ASSERT_EQ(grads.size(), 1u);
    EXPECT_EQ(OpInput(grads[0], "XShape"), std::vector<std::string>{"xs"});
    EXPECT_TRUE(OpInput(grads[0], "X").empty()) << type;
  }
}

TEST(SqueezeOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{-1, 1, 5});
  InferShapeAtCompileTime(Op("squeeze2", {1}), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({-1, 5}));
  EXPECT_EQ(VarShape(GetVarDesc(*block, "xs")), Shape({0, -1, 1, 5}));
  InferShapeAtCompileTime(Op("unsqueeze2", {-1}), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({-1, 1, 5, 1}));
}

TEST(SqueezeOp, BadAxesNameTheOpAndX) {
  Tensor x = RandomTensor<double>({2, 1}, -1, 1, 4);
  for (const auto& [type, axes] :
       std::vector<std::pair<std::string, std::vector<int32_t>>>{
           {"squeeze2", {2}},
           {"squeeze2", {-3}},
           {"unsqueeze2", {4}},
           {"unsqueeze2", {-4}},
           {"unsqueeze2", {}}}) {
    std::string msg = ErrorOf(Op(type, axes), {{"x", x}});
    EXPECT_NE(msg.find(type), std::string::npos) << msg;
    EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("axes"), std::string::npos) << msg;
  }
  std::string msg =
      ErrorOf(Op("unsqueeze2", {0, 0, 0, 0, 0, 0, 0}), {{"x", x}});
  EXPECT_NE(msg.find("exceeds 8 dims"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
