#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::AccuracyOp;
using testing::Labels;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

TEST(AccuracyOp, CountsTop1Hits) {
  // argmaxes: 1, 0, 2, 2
  Tensor scores = MakeTensor<double>(
      {4, 3}, {0.1, 0.7, 0.2, 0.9, 0.05, 0.05, 0.2, 0.3, 0.5, -1, -2, 3});
  auto out = RunOp(AccuracyOp(),
                   {{"scores", scores}, {"label", Labels({1, 0, 1, 2})}});
  ASSERT_EQ(out["acc"].shape(), Shape({1}));
  EXPECT_EQ(out["acc"].dtype(), DataType::kFloat64);
  EXPECT_DOUBLE_EQ(ToVector<double>(out["acc"])[0], 0.75);
  EXPECT_EQ(out["correct"].dtype(), DataType::kInt64);
  EXPECT_EQ(ToVector<int64_t>(out["correct"])[0], 3);
  EXPECT_EQ(ToVector<int64_t>(out["total"])[0], 4);
}

TEST(AccuracyOp, TiesGoToLowestIndex) {
  Tensor scores = MakeTensor<float>({2, 3}, {0.5f, 0.5f, 0.1f, 1, 1, 1});
  auto hit =
      RunOp(AccuracyOp(), {{"scores", scores}, {"label", Labels({0, 0})}});
  EXPECT_EQ(hit["acc"].dtype(), DataType::kFloat32);
  EXPECT_FLOAT_EQ(ToVector<float>(hit["acc"])[0], 1.0f);
  auto miss =
      RunOp(AccuracyOp(), {{"scores", scores}, {"label", Labels({1, 2})}});
  EXPECT_FLOAT_EQ(ToVector<float>(miss["acc"])[0], 0.0f);
  EXPECT_EQ(ToVector<int64_t>(miss["correct"])[0], 0);
}

TEST(AccuracyOp, MatchesNaiveOnRandomScores) {
  const int n = 50, c = 7;
  Tensor scores = RandomTensor<float>({n, c}, -1, 1, 71);
  std::vector<int64_t> labels;
  for (int i = 0; i < n; ++i) labels.push_back((i * 5) % c);
  auto s = ToVector<float>(scores);
  int64_t want = 0;
  for (int i = 0; i < n; ++i) {
    int best = 0;
    for (int j = 1; j < c; ++j)
      if (s[i * c + j] > s[i * c + best]) best = j;
    want += best == labels[i];
  }
  auto out =
      RunOp(AccuracyOp(), {{"scores", scores}, {"label", Labels(labels)}});
  EXPECT_EQ(ToVector<int64_t>(out["correct"])[0], want);
  EXPECT_FLOAT_EQ(ToVector<float>(out["acc"])[0], static_cast<float>(want) / n);
}

TEST(AccuracyOp, IsNotDifferentiable) {
  EXPECT_FALSE(OpRegistry::Global().Get("accuracy").has_grad());
}

TEST(AccuracyOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "scores", DataType::kFloat32, Shape{-1, 10});
  AddVarDesc(block, "label", DataType::kInt64, Shape{-1, 1});
  InferShapeAtCompileTime(AccuracyOp(), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "acc")), Shape({1}));
  EXPECT_EQ(VarDtype(GetVarDesc(*block, "acc")), DataType::kFloat32);
  EXPECT_EQ(VarDtype(GetVarDesc(*block, "correct")), DataType::kInt64);
  EXPECT_EQ(VarDtype(GetVarDesc(*block, "total")), DataType::kInt64);
}

using testing::ErrorOf;

TEST(AccuracyOp, BadLabelsNameTheVar) {
  std::string msg = ErrorOf(AccuracyOp("truth"),
                            {{"scores", RandomTensor<float>({2, 3}, 0, 1, 1)},
                             {"truth", Labels({0, 3})}});
  ASSERT_FALSE(msg.empty());
  EXPECT_NE(msg.find("accuracy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("truth"), std::string::npos) << msg;
  msg = ErrorOf(AccuracyOp("truth"),
                {{"scores", RandomTensor<float>({2, 3}, 0, 1, 1)},
                 {"truth", Labels({0, 1, 2})}});
  ASSERT_FALSE(msg.empty());
  EXPECT_NE(msg.find("truth"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 1]"), std::string::npos) << msg;
}

// k > 1: a row counts when fewer than k scores rank before its label's
// (larger, or equal at a lower index), checked against a naive count.
TEST(AccuracyOp, TopKMatchesNaive) {
  const int n = 60, c = 9;
  Tensor scores = RandomTensor<double>({n, c}, -1, 1, 72);
  std::vector<int64_t> labels;
  for (int i = 0; i < n; ++i) labels.push_back((i * 4) % c);
  auto s = ToVector<double>(scores);
  for (int k : {1, 2, 5, 9}) {
    int64_t want = 0;
    for (int i = 0; i < n; ++i) {
      int larger = 0;
      for (int j = 0; j < c; ++j) larger += s[i * c + j] > s[i * c + labels[i]];
      want += larger < k;
    }
    auto op = AccuracyOp();
    SetOpAttr(&op, "k", int32_t{k});
    auto out = RunOp(op, {{"scores", scores}, {"label", Labels(labels)}});
    EXPECT_EQ(ToVector<int64_t>(out["correct"])[0], want) << k;
    EXPECT_DOUBLE_EQ(ToVector<double>(out["acc"])[0],
                     static_cast<double>(want) / n);
  }
}

TEST(AccuracyOp, TopKTiesGoToLowestIndex) {
  Tensor scores = MakeTensor<float>({1, 4}, {1, 1, 1, 0});
  auto op = AccuracyOp();
  SetOpAttr(&op, "k", int32_t{2});
  for (int64_t label : {0, 1, 2, 3}) {
    auto out = RunOp(op, {{"scores", scores}, {"label", Labels({label})}});
    EXPECT_EQ(ToVector<int64_t>(out["correct"])[0], label < 2 ? 1 : 0) << label;
  }
}

}  // namespace
}  // namespace fluid
