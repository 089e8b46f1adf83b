// lod_reset (and lod_append, the same op with append=true) against the
// LoD each source gives: Y's LoD, Y's data as offsets (int32, int64),
// target_lod; Out's data is X's. The gradient (fp64, numeric) is
// Out@GRAD with X's LoD. Errors: offsets that do not describe X's rows,
// no source, an appended level that does not fit under X's, Y's dtype.
// Several levels: lod_append below X's LoD, Y's two levels taken whole.
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

proto::OpDesc LoDReset(bool with_y, std::vector<int32_t> target = {},
                       bool append = false) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"X", {"x"}}};
  if (with_y) in.push_back({"Y", {"y"}});
  return MakeOp("lod_reset", in, {{"Out", {"out"}}},
                {{"target_lod", target}, {"append", append}});
}

Tensor WithLoD(Tensor t, LoD lod) {
  t.set_lod(std::move(lod));
  return t;
}

TEST(LoDResetOp, EachSourceOfTheOffsets) {
  const Tensor x = WithLoD(RandomTensor<double>({5, 2}, -1, 1, 1), {0, 5});
  const std::vector<double> data = ToVector<double>(x);
  struct Case {
    proto::OpDesc op;
    testing::TensorMap in;
    LoD want;
  };
  std::vector<Case> cases = {
      {LoDReset(false, {0, 2, 5}), {{"x", x}}, {0, 2, 5}},
      {LoDReset(true),
       {{"x", x},
        // Y's LoD wins over its data (which hold no valid offsets). The
        // test program declares Y without LoD, so Y is int64 here: a Y
        // declared without LoD must be offsets' dtype.
        {"y",
         WithLoD(MakeTensor<int64_t>({5, 1}, {9, 9, 9, 9, 9}), {0, 1, 1, 5})}},
       {0, 1, 1, 5}},
      {LoDReset(true),
       {{"x", x}, {"y", MakeTensor<int32_t>({3}, {0, 3, 5})}},
       {0, 3, 5}},
      {LoDReset(true, {0, 5}),  // Y wins over target_lod
       {{"x", x}, {"y", MakeTensor<int64_t>({4}, {0, 0, 4, 5})}},
       {0, 0, 4, 5}},
  };
  for (const Case& c : cases) {
    Tensor out = RunOp(c.op, c.in)["out"];
    EXPECT_EQ(out.lod(), c.want);
    EXPECT_EQ(out.shape(), x.shape());
    EXPECT_EQ(ToVector<double>(out), data);
  }
}

TEST(LoDResetOp, AppendGivesATensorWithoutLoDItsLevel) {
  const Tensor x = MakeTensor<int64_t>({3, 1}, {7, 8, 9});
  Tensor out = RunOp(LoDReset(false, {0, 1, 3}, true), {{"x", x}})["out"];
  EXPECT_EQ(out.lod(), LoD({0, 1, 3}));
  EXPECT_EQ(ToVector<int64_t>(out), (std::vector<int64_t>{7, 8, 9}));
}

// Fluid's lod_append on a tensor with LoD: the offsets become a new finest
// level, and X's old finest level now counts the new level's sequences, so
// it fits only a level of one sequence per row (Fluid's own example); any
// other is refused, naming both levels, rather than left inconsistent.
TEST(LoDResetOp, AppendAddsALevelBelowXsLoD) {
  const Tensor x =
      WithLoD(MakeTensor<int64_t>({4, 1}, {1, 2, 3, 4}), {0, 3, 4});
  Tensor out = RunOp(LoDReset(false, {0, 1, 2, 3, 4}, true), {{"x", x}})["out"];
  EXPECT_EQ(out.all_lod(), LoDLevels({{0, 3, 4}, {0, 1, 2, 3, 4}}));
  EXPECT_EQ(out.lod(), LoD({0, 1, 2, 3, 4}));
  EXPECT_EQ(out.lod_levels(), 2);
  EXPECT_EQ(ToVector<int64_t>(out), (std::vector<int64_t>{1, 2, 3, 4}));
  const std::string msg = ErrorOf(LoDReset(false, {0, 1, 4}, true), {{"x", x}});
  EXPECT_NE(msg.find("(LoD level 0 of 2): LoD offsets [0, 3, 4] end at 4 but "
                     "the level below has 2 sequences"),
            std::string::npos)
      << msg;
}

// Y's LoD is taken whole: every level, as beam search's scores carry two.
TEST(LoDResetOp, YsLoDOfTwoLevelsIsTakenWhole) {
  const Tensor x = RandomTensor<double>({4, 2}, -1, 1, 4);
  Tensor y = MakeTensor<int64_t>({4, 1}, {0, 0, 0, 0});
  y.set_all_lod({{0, 2, 3}, {0, 1, 1, 4}});
  Tensor out = RunOp(LoDReset(true), {{"x", x}, {"y", y}})["out"];
  EXPECT_EQ(out.all_lod(), y.all_lod());
  EXPECT_EQ(ToVector<double>(out), ToVector<double>(x));
  GradCheckOptions o;
  o.wrt = {"x"};
  Tensor x2 = x;
  x2.set_all_lod({{0, 1, 2}, {0, 3, 4}});
  EXPECT_TRUE(CheckGradient(LoDReset(true), {{"x", x2}, {"y", y}}, o));
  auto grad =
      RunOp(MakeOp("lod_reset_grad", {{"X", {"x"}}, {"Out@GRAD", {"g"}}},
                   {{"X@GRAD", {"dx"}}},
                   {{"target_lod", std::vector<int32_t>{0, 4}}}),
            {{"x", x2}, {"g", out}});
  EXPECT_EQ(grad["dx"].all_lod(), x2.all_lod());
  Tensor bad = y;
  bad.set_all_lod({{0, 2, 4}, {0, 1, 1, 4}});
  const std::string msg = ErrorOf(LoDReset(true), {{"x", x}, {"y", bad}});
  EXPECT_NE(msg.find("end at 4 but the level below has 3 sequences"),
            std::string::npos)
      << msg;
}

TEST(LoDResetOp, GradientIsOutGradWithXsLoD) {
  GradCheckOptions o;
  o.wrt = {"x"};
  const Tensor x = WithLoD(RandomTensor<double>({4, 3}, -1, 1, 2), {0, 1, 4});
  EXPECT_TRUE(CheckGradient(LoDReset(false, {0, 2, 2, 4}), {{"x", x}}, o));
  EXPECT_TRUE(CheckGradient(
      LoDReset(true), {{"x", x}, {"y", MakeTensor<int64_t>({2}, {0, 4})}}, o));
  const Tensor g = MakeTensor<double>({4, 3}, std::vector<double>(12, 0.5));
  auto grad =
      RunOp(MakeOp("lod_reset_grad", {{"X", {"x"}}, {"Out@GRAD", {"g"}}},
                   {{"X@GRAD", {"dx"}}},
                   {{"target_lod", std::vector<int32_t>{0, 4}}}),
            {{"x", x}, {"g", WithLoD(g, {0, 4})}});
  EXPECT_EQ(grad["dx"].lod(), LoD({0, 1, 4}));
  EXPECT_EQ(ToVector<double>(grad["dx"]), ToVector<double>(g));
}

TEST(LoDResetOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{-1, 5});
  InferShapeAtCompileTime(LoDReset(false, {0, 2}), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({-1, 5}));
  EXPECT_EQ(GetVarDesc(*block, "out").lod_level(), 1);
}

TEST(LoDResetOp, Errors) {
  const Tensor x = RandomTensor<double>({3, 2}, -1, 1, 3);
  std::string msg = ErrorOf(LoDReset(false, {0, 2}), {{"x", x}});
  EXPECT_NE(msg.find("end at 2 but the data has 3 rows"), std::string::npos)
      << msg;
  msg = ErrorOf(LoDReset(false, {1, 3}), {{"x", x}});
  EXPECT_NE(msg.find("must start at 0"), std::string::npos) << msg;
  msg = ErrorOf(LoDReset(false, {0, 2, 1, 3}), {{"x", x}});
  EXPECT_NE(msg.find("decrease at index 2"), std::string::npos) << msg;
  msg = ErrorOf(LoDReset(false), {{"x", x}});
  EXPECT_NE(msg.find("neither Y nor attr target_lod"), std::string::npos)
      << msg;
  msg = ErrorOf(LoDReset(true),
                {{"x", x}, {"y", MakeTensor<float>({2}, {0, 3})}});
  EXPECT_NE(msg.find("not int32 or int64"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
