// LoD: the offsets' checks, copies carrying them, the executor's feed
// checks, and ops that keep rows passing them on (and no stale offsets left
// on an output from an earlier run); the same for several levels.
#include <gtest/gtest.h>

#include <string>

#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeTensor;
using testing::RandomTensor;

TEST(LoD, ChecksNameWhatTheyCheck) {
  EXPECT_EQ(ErrorOf([] { CheckLoD({0, 2, 5}, 5, "feed 'w'"); }), "");
  EXPECT_EQ(ErrorOf([] { CheckLoD({0, 0, 5, 5}, 5, "feed 'w'"); }), "");
  std::string e = ErrorOf([] { CheckLoD({1, 5}, 5, "feed 'w'"); });
  EXPECT_NE(e.find("feed 'w'"), std::string::npos) << e;
  EXPECT_NE(e.find("start at 0"), std::string::npos) << e;
  e = ErrorOf([] { CheckLoD({0, 3, 2, 5}, 5, "feed 'w'"); });
  EXPECT_NE(e.find("decrease"), std::string::npos) << e;
  e = ErrorOf([] { CheckLoD({0, 2, 4}, 5, "feed 'w'"); });
  EXPECT_NE(e.find("5 rows"), std::string::npos) << e;
  e = ErrorOf([] { LoDFromLengths({2, -1}, "x"); });
  EXPECT_NE(e.find("sequence 1"), std::string::npos) << e;
  EXPECT_EQ(LoDFromLengths({2, 0, 3}, "x"), (LoD{0, 2, 2, 5}));
  EXPECT_EQ(LoDLengths({0, 2, 2, 5}), (std::vector<int64_t>{2, 0, 3}));
}

TEST(LoD, CopiesCarryItViewsDoNot) {
  Tensor a = RandomTensor<float>({5, 2}, -1, 1, 1);
  a.set_lod({0, 2, 5});
  Tensor b;
  b.CopyFrom(a);
  EXPECT_EQ(b.lod(), a.lod());
  Tensor v;
  v.ShareDataWith(a);
  EXPECT_FALSE(v.has_lod());
  EXPECT_FALSE(a.Slice(0, 2).has_lod());
}

proto::ProgramDesc FcLikeProgram(int lod_level) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "x", DataType::kFloat32, Shape{-1, 3})
      ->set_lod_level(lod_level);
  AddVarDesc(b, "w", DataType::kFloat32, Shape{3, 2});
  AddVarDesc(b, "h", DataType::kFloat32, Shape{});
  AddVarDesc(b, "y", DataType::kFloat32, Shape{});
  AddVarDesc(b, "z", DataType::kFloat32, Shape{});
  for (const proto::OpDesc& op :
       {MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"h"}}}),
        MakeOp("relu", {{"X", {"h"}}}, {{"Out", {"y"}}}),
        MakeOp("elementwise_add", {{"X", {"y"}}, {"Y", {"h"}}},
               {{"Out", {"z"}}})}) {
    *b->add_ops() = op;
    InferShapeAtCompileTime(op, b);
  }
  return p;
}

TEST(LoD, RowKeepingOpsPassItOnAtBuildAndRunTime) {
  proto::ProgramDesc p = FcLikeProgram(1);
  EXPECT_EQ(GetVarDesc(p.blocks(0), "z").lod_level(), 1);
  Scope scope;
  Executor exe;
  auto prepared = exe.Prepare(p, &scope);
  Tensor x = RandomTensor<float>({5, 3}, -1, 1, 2);
  x.set_lod({0, 1, 5});
  std::vector<Tensor> out;
  exe.Run(prepared.get(),
          {{"x", x}, {"w", RandomTensor<float>({3, 2}, -1, 1, 3)}}, {"z"},
          &out);
  EXPECT_EQ(out[0].lod(), (LoD{0, 1, 5}));
}

TEST(LoD, OutputsHoldNoStaleOffsets) {
  proto::ProgramDesc p = FcLikeProgram(0);
  Scope scope;
  Executor exe;
  auto prepared = exe.Prepare(p, &scope);
  Tensor w = RandomTensor<float>({3, 2}, -1, 1, 3);
  Tensor x = RandomTensor<float>({5, 3}, -1, 1, 2);
  x.set_lod({0, 2, 5});
  std::vector<Tensor> out;
  exe.Run(prepared.get(), {{"x", x}, {"w", w}}, {"z"}, &out);
  EXPECT_TRUE(out[0].has_lod());
  exe.Run(prepared.get(),
          {{"x", RandomTensor<float>({5, 3}, -1, 1, 2)}, {"w", w}}, {"z"},
          &out);
  EXPECT_FALSE(out[0].has_lod());
}

TEST(LoD, FeedChecksNameTheVariable) {
  proto::ProgramDesc p = FcLikeProgram(1);
  Scope scope;
  Executor exe;
  auto prepared = exe.Prepare(p, &scope);
  Tensor w = RandomTensor<float>({3, 2}, -1, 1, 3);
  Tensor dense = RandomTensor<float>({5, 3}, -1, 1, 2);
  std::string e = ErrorOf([&] {
    exe.Run(prepared.get(), {{"x", dense}, {"w", w}});
  });
  EXPECT_NE(e.find("feed 'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("lod_level"), std::string::npos) << e;
  Tensor bad = dense;
  bad.set_lod({0, 2, 4});
  e = ErrorOf([&] { exe.Run(prepared.get(), {{"x", bad}, {"w", w}}); });
  EXPECT_NE(e.find("feed 'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("5 rows"), std::string::npos) << e;
}

TEST(LoD, SeveralLevelsAreCheckedLevelByLevel) {
  const LoDLevels ok = {{0, 2, 3}, {0, 1, 4, 6}};
  EXPECT_EQ(ErrorOf([&] { CheckLoDLevels(ok, 6, "feed 'w'"); }), "");
  EXPECT_EQ(ErrorOf([] { CheckLoDLevels({}, 6, "feed 'w'"); }), "");
  std::string e = ErrorOf([] {
    CheckLoDLevels({{0, 2, 4}, {0, 1, 4, 6}}, 6, "feed 'w'");
  });
  EXPECT_NE(e.find("feed 'w' (LoD level 0 of 2): LoD offsets [0, 2, 4] end "
                   "at 4 but the level below has 3 sequences"),
            std::string::npos)
      << e;
  e = ErrorOf([] { CheckLoDLevels({{0, 2, 3}, {0, 1, 4, 6}}, 7, "feed 'w'"); });
  EXPECT_NE(e.find("(LoD level 1 of 2)"), std::string::npos) << e;
  EXPECT_NE(e.find("7 rows"), std::string::npos) << e;
  // Level 0 in rows: source 0 is rows [0, 4), source 1 rows [4, 6).
  EXPECT_EQ(AbsoluteLoD(ok, 0), (LoD{0, 4, 6}));
  EXPECT_EQ(AbsoluteLoD(ok, 1), (LoD{0, 1, 4, 6}));
  EXPECT_EQ(LoDToString(ok), "[[0, 2, 3], [0, 1, 4, 6]]");
}

TEST(LoD, SeveralLevelsTravelWithCopiesAndRowKeepingOps) {
  Tensor a = RandomTensor<float>({6, 3}, -1, 1, 1);
  a.set_all_lod({{0, 2, 3}, {0, 1, 4, 6}});
  EXPECT_EQ(a.lod_levels(), 2);
  EXPECT_EQ(a.lod(), (LoD{0, 1, 4, 6}));  // the finest level: rows
  EXPECT_EQ(a.outer_lod(), (LoDLevels{{0, 2, 3}}));
  Tensor b;
  b.CopyFrom(a);
  EXPECT_EQ(b.all_lod(), a.all_lod());
  b.set_lod({0, 6});  // one level: the others go
  EXPECT_EQ(b.lod_levels(), 1);
  b.clear_lod();
  EXPECT_EQ(b.lod_levels(), 0);
  EXPECT_TRUE(b.all_lod().empty());

  proto::ProgramDesc p = FcLikeProgram(2);
  EXPECT_EQ(GetVarDesc(p.blocks(0), "z").lod_level(), 2);
  Scope scope;
  Executor exe;
  auto prepared = exe.Prepare(p, &scope);
  std::vector<Tensor> out;
  const Tensor w = RandomTensor<float>({3, 2}, -1, 1, 3);
  exe.Run(prepared.get(), {{"x", a}, {"w", w}}, {"z"}, &out);
  EXPECT_EQ(out[0].all_lod(), a.all_lod());
  // Declared with 2 levels, fed 1: named with both counts.
  Tensor one = a;
  one.set_lod({0, 6});
  const std::string e = ErrorOf([&] {
    exe.Run(prepared.get(), {{"x", one}, {"w", w}});
  });
  EXPECT_NE(e.find("feed 'x' is declared with lod_level 2 but was fed 1 "
                   "level(s)"),
            std::string::npos)
      << e;
  Tensor bad = a;
  bad.set_all_lod({{0, 2, 4}, {0, 1, 4, 6}});
  const std::string e2 = ErrorOf([&] {
    exe.Run(prepared.get(), {{"x", bad}, {"w", w}});
  });
  EXPECT_NE(e2.find("level below has 3 sequences"), std::string::npos) << e2;
}

TEST(LoD, TopKKeepsEveryLevelOnBothOutputs) {
  Tensor x = RandomTensor<float>({3, 5}, -1, 1, 4);
  x.set_all_lod({{0, 1, 2}, {0, 2, 3}});
  auto out = testing::RunOp(
      MakeOp("top_k", {{"X", {"x"}}}, {{"Out", {"v"}}, {"Indices", {"i"}}},
             {{"k", int32_t{2}}}),
      {{"x", x}});
  EXPECT_EQ(out["v"].all_lod(), x.all_lod());
  EXPECT_EQ(out["i"].all_lod(), x.all_lod());
}

}  // namespace
}  // namespace fluid
