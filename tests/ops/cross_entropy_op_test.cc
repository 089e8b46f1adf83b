#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::CrossEntropyOp;
using testing::GradCheckOptions;
using testing::Labels;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

// Rows of probabilities in [0.05, 1] (normalised, so each row sums to 1).
template <typename T>
Tensor Probabilities(int n, int c, uint64_t seed) {
  Tensor raw = RandomTensor<double>({n, c}, 0.5, 1.5, seed);
  auto v = ToVector<double>(raw);
  std::vector<T> p(v.size());
  for (int i = 0; i < n; ++i) {
    double s = 0;
    for (int j = 0; j < c; ++j) s += v[i * c + j];
    for (int j = 0; j < c; ++j) p[i * c + j] = static_cast<T>(v[i * c + j] / s);
  }
  return MakeTensor<T>({n, c}, p);
}

TEST(CrossEntropyOp, ForwardIsMinusLogOfLabelProbability) {
  Tensor x = Probabilities<double>(4, 3, 1);
  Tensor y =
      RunOp(CrossEntropyOp(), {{"x", x}, {"label", Labels({2, 0, 1, 2})}})["y"];
  ASSERT_EQ(y.shape(), Shape({4, 1}));
  auto xs = ToVector<double>(x);
  auto ys = ToVector<double>(y);
  int64_t labels[] = {2, 0, 1, 2};
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(ys[i], -std::log(xs[i * 3 + labels[i]]), 1e-14) << i;
}

TEST(CrossEntropyOp, IgnoreIndexGivesZeroLossAndGradient) {
  Tensor x = Probabilities<double>(3, 4, 2);
  auto y =
      ToVector<double>(RunOp(CrossEntropyOp("label", 7),
                             {{"x", x}, {"label", Labels({1, 7, 3})}})["y"]);
  EXPECT_EQ(y[1], 0.0);
  EXPECT_GT(y[0], 0.0);
  auto grad = MakeOp("cross_entropy_grad",
                     {{"X", {"x"}}, {"Label", {"label"}}, {"Y@GRAD", {"dy"}}},
                     {{"X@GRAD", {"dx"}}}, {{"ignore_index", 7}});
  auto dx = ToVector<double>(
      RunOp(grad, {{"x", x},
                   {"label", Labels({1, 7, 3})},
                   {"dy", MakeTensor<double>({3, 1}, {1, 1, 1})}})["dx"]);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(dx[4 + j], 0.0);
  EXPECT_NE(dx[1], 0.0);
}

TEST(CrossEntropyOp, Gradient) {
  for (auto nc : std::vector<std::pair<int, int>>{{1, 2}, {3, 5}, {6, 10}}) {
    std::vector<int64_t> labels;
    for (int i = 0; i < nc.first; ++i)
      labels.push_back((i * 3 + 1) % nc.second);
    EXPECT_TRUE(CheckGradient(
        CrossEntropyOp(), {{"x", Probabilities<double>(nc.first, nc.second, 3)},
                           {"label", Labels(labels)}}));
  }
}

TEST(CrossEntropyOp, FloatMatchesDouble) {
  auto d = ToVector<double>(
      RunOp(CrossEntropyOp(), {{"x", Probabilities<double>(5, 4, 4)},
                               {"label", Labels({0, 1, 2, 3, 0})}})["y"]);
  auto f = ToVector<float>(
      RunOp(CrossEntropyOp(), {{"x", Probabilities<float>(5, 4, 4)},
                               {"label", Labels({0, 1, 2, 3, 0})}})["y"]);
  for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-5);
}

TEST(CrossEntropyOp, CompileTimeShapeKeepsUnknownBatch) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{-1, 10});
  AddVarDesc(block, "label", DataType::kInt64, Shape{-1, 1});
  InferShapeAtCompileTime(CrossEntropyOp(), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "y")), Shape({-1, 1}));
}

using testing::ErrorOf;

TEST(CrossEntropyOp, LabelOutOfRangeNamesLabelVar) {
  for (int64_t bad : {3, -1}) {
    std::string msg = ErrorOf(
        CrossEntropyOp("digit"),
        {{"x", Probabilities<double>(2, 3, 5)}, {"digit", Labels({0, bad})}});
    ASSERT_FALSE(msg.empty()) << "expected an error for label " << bad;
    EXPECT_NE(msg.find("cross_entropy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("digit"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(bad)), std::string::npos) << msg;
  }
}

TEST(CrossEntropyOp, BadLabelShapeOrDtypeNamesVar) {
  std::string msg =
      ErrorOf(CrossEntropyOp("digit"),
              {{"x", Probabilities<double>(2, 3, 5)},
               {"digit", MakeTensor<int64_t>({3, 1}, {0, 1, 2})}});
  ASSERT_FALSE(msg.empty());
  EXPECT_NE(msg.find("digit"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 1]"), std::string::npos) << msg;
  msg = ErrorOf(CrossEntropyOp("digit"),
                {{"x", Probabilities<double>(2, 3, 5)},
                 {"digit", MakeTensor<int32_t>({2, 1}, {0, 1})}});
  ASSERT_FALSE(msg.empty());
  EXPECT_NE(msg.find("digit"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int64"), std::string::npos) << msg;
}

proto::OpDesc SoftCrossEntropyOp() {
  return MakeOp("cross_entropy", {{"X", {"x"}}, {"Label", {"label"}}},
                {{"Y", {"y"}}}, {{"soft_label", true}});
}

TEST(CrossEntropyOp, SoftLabelMatchesNaive) {
  Tensor x = Probabilities<double>(4, 5, 11);
  Tensor z = Probabilities<double>(4, 5, 12);
  Tensor y = RunOp(SoftCrossEntropyOp(), {{"x", x}, {"label", z}})["y"];
  ASSERT_EQ(y.shape(), Shape({4, 1}));
  auto xs = ToVector<double>(x), zs = ToVector<double>(z);
  auto ys = ToVector<double>(y);
  for (int i = 0; i < 4; ++i) {
    double want = 0;
    for (int j = 0; j < 5; ++j) want -= zs[i * 5 + j] * std::log(xs[i * 5 + j]);
    EXPECT_NEAR(ys[i], want, 1e-14) << i;
  }
}

TEST(CrossEntropyOp, SoftLabelGradient) {
  GradCheckOptions o;
  o.wrt = {"x"};
  EXPECT_TRUE(CheckGradient(SoftCrossEntropyOp(),
                            {{"x", Probabilities<double>(3, 4, 13)},
                             {"label", Probabilities<double>(3, 4, 14)}},
                            o));
}

TEST(CrossEntropyOp, SoftLabelMustBeLikeX) {
  std::string msg = testing::ErrorOf(
      SoftCrossEntropyOp(),
      {{"x", Probabilities<double>(3, 4, 15)}, {"label", Labels({0, 1, 2})}});
  EXPECT_NE(msg.find("with soft_label, Label 'label'"), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace fluid
