#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
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

proto::OpDesc TopK(int k) {
  return MakeOp("top_k", {{"X", {"x"}}},
                {{"Out", {"out"}}, {"Indices", {"idx"}}}, {{"k", int32_t{k}}});
}

TEST(TopKOp, MatchesStableSort) {
  uint64_t seed = 1;
  for (Shape s : {Shape({4, 7}), Shape({2, 3, 5}), Shape({6})}) {
    for (int k : {1, 3, static_cast<int>(s[s.rank() - 1])}) {
      Tensor x = RandomTensor<double>(s, -1, 1, seed++);
      auto outs = RunOp(TopK(k), {{"x", x}});
      const int64_t d = s[s.rank() - 1], rows = s.numel() / d;
      Shape want = s;
      want[s.rank() - 1] = k;
      ASSERT_EQ(outs["out"].shape(), want);
      ASSERT_EQ(outs["idx"].shape(), want);
      auto xv = ToVector<double>(x);
      auto vals = ToVector<double>(outs["out"]);
      auto idx = ToVector<int64_t>(outs["idx"]);
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<int64_t> order(d);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return xv[r * d + a] > xv[r * d + b];
        });
        for (int j = 0; j < k; ++j) {
          EXPECT_EQ(idx[r * k + j], order[j]) << s << " k " << k;
          EXPECT_EQ(vals[r * k + j], xv[r * d + order[j]]);
        }
      }
    }
  }
}

TEST(TopKOp, TiesInIndexOrder) {
  Tensor x = MakeTensor<float>({1, 6}, {2, 5, 2, 5, 1, 2});
  auto outs = RunOp(TopK(4), {{"x", x}});
  EXPECT_EQ(ToVector<int64_t>(outs["idx"]), (std::vector<int64_t>{1, 3, 0, 2}));
  EXPECT_EQ(ToVector<float>(outs["out"]), (std::vector<float>{5, 5, 2, 2}));
}

TEST(TopKOp, Gradient) {
  uint64_t seed = 20;
  for (int k : {1, 2, 5}) {
    EXPECT_TRUE(CheckGradient(
        TopK(k), {{"x", RandomTensor<double>({3, 5}, -1, 1, seed++)}}))
        << k;
  }
}

TEST(TopKOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{-1, 10});
  InferShapeAtCompileTime(TopK(3), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({-1, 3}));
  EXPECT_EQ(VarDtype(GetVarDesc(*block, "idx")), DataType::kInt64);
}

TEST(TopKOp, KOutOfRangeNamesX) {
  std::string msg =
      ErrorOf(TopK(4), {{"x", RandomTensor<float>({2, 3}, -1, 1, 1)}});
  EXPECT_NE(msg.find("top_k: k 4 must be in [1, 3] for X 'x'"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace fluid
