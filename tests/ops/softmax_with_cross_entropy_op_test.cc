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
using testing::GradCheckOptions;
using testing::Labels;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::SoftmaxCeOp;
using testing::SomeLabels;
using testing::ToVector;

// Textbook formulas in long double: softmax_j = e^x_j / sum e^x,
// loss = -log softmax_label.
void NaiveSoftmaxCe(const std::vector<double>& x,
                    const std::vector<int64_t>& label, int n, int c,
                    std::vector<double>* softmax, std::vector<double>* loss) {
  softmax->assign(x.size(), 0);
  loss->assign(n, 0);
  for (int i = 0; i < n; ++i) {
    long double sum = 0;
    for (int j = 0; j < c; ++j) sum += std::exp((long double)x[i * c + j]);
    for (int j = 0; j < c; ++j)
      (*softmax)[i * c + j] =
          static_cast<double>(std::exp((long double)x[i * c + j]) / sum);
    (*loss)[i] = static_cast<double>(
        -std::log(std::exp((long double)x[i * c + label[i]]) / sum));
  }
}

TEST(SoftmaxWithCrossEntropyOp, ForwardMatchesNaive) {
  for (auto nc : std::vector<std::pair<int, int>>{
           {1, 1}, {1, 10}, {3, 7}, {5, 2}, {64, 10}, {3, 1001}}) {
    int n = nc.first, c = nc.second;
    SCOPED_TRACE("N " + std::to_string(n) + " C " + std::to_string(c));
    Tensor x = RandomTensor<double>({n, c}, -4, 4, 61);
    auto labels = SomeLabels(n, c);
    for (int threads : {1, 2}) {
      auto out = RunOp(SoftmaxCeOp(),
                       {{"logits", x}, {"label", Labels(labels)}}, threads);
      ASSERT_EQ(out["softmax"].shape(), Shape({n, c}));
      ASSERT_EQ(out["loss"].shape(), Shape({n, 1}));
      std::vector<double> sm, loss;
      NaiveSoftmaxCe(ToVector<double>(x), labels, n, c, &sm, &loss);
      auto got_sm = ToVector<double>(out["softmax"]);
      auto got_loss = ToVector<double>(out["loss"]);
      for (size_t i = 0; i < sm.size(); ++i)
        ASSERT_NEAR(got_sm[i], sm[i], 1e-14) << "softmax " << i;
      for (int i = 0; i < n; ++i)
        ASSERT_NEAR(got_loss[i], loss[i], 1e-12) << "loss " << i;
    }
  }
}

TEST(SoftmaxWithCrossEntropyOp, StableForHugeLogits) {
  // exp(1000) overflows; the max-shifted form must not.
  Tensor x = MakeTensor<double>({2, 3}, {1000, 0, -1000, -1000, -999, -1000});
  auto out = RunOp(SoftmaxCeOp(), {{"logits", x}, {"label", Labels({1, 1})}});
  auto loss = ToVector<double>(out["loss"]);
  auto sm = ToVector<double>(out["softmax"]);
  EXPECT_NEAR(loss[0], 1000.0, 1e-9);
  double lse = -999 + std::log(1 + 2 * std::exp(-1.0));
  EXPECT_NEAR(loss[1], lse - (-999), 1e-12);
  for (double v : sm) EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(sm[0], 1.0, 1e-15);

  Tensor xf = MakeTensor<float>({1, 2}, {100.0f, -100.0f});
  auto lf = ToVector<float>(
      RunOp(SoftmaxCeOp(), {{"logits", xf}, {"label", Labels({1})}})["loss"]);
  EXPECT_NEAR(lf[0], 200.0f, 1e-3f);
}

TEST(SoftmaxWithCrossEntropyOp, Gradient) {
  for (auto nc :
       std::vector<std::pair<int, int>>{{1, 1}, {1, 4}, {3, 5}, {7, 10}}) {
    SCOPED_TRACE("N " + std::to_string(nc.first) + " C " +
                 std::to_string(nc.second));
    GradCheckOptions opt;
    opt.of = {"loss"};
    EXPECT_TRUE(CheckGradient(
        SoftmaxCeOp(),
        {{"logits", RandomTensor<double>({nc.first, nc.second}, -3, 3, 62)},
         {"label", Labels(SomeLabels(nc.first, nc.second))}},
        opt));
  }
}

TEST(SoftmaxWithCrossEntropyOp, GradientWithIgnoredRow) {
  GradCheckOptions opt;
  opt.of = {"loss"};
  opt.threads = 2;
  EXPECT_TRUE(
      CheckGradient(SoftmaxCeOp("label", 0),
                    {{"logits", RandomTensor<double>({4, 3}, -3, 3, 63)},
                     {"label", Labels({1, 0, 2, 0})}},
                    opt));
  auto loss = ToVector<double>(
      RunOp(SoftmaxCeOp("label", 0),
            {{"logits", RandomTensor<double>({4, 3}, -3, 3, 63)},
             {"label", Labels({1, 0, 2, 0})}})["loss"]);
  EXPECT_EQ(loss[1], 0.0);
  EXPECT_GT(loss[0], 0.0);
}

TEST(SoftmaxWithCrossEntropyOp, FloatMatchesDouble) {
  auto labels = Labels(SomeLabels(6, 9));
  auto d = RunOp(
      SoftmaxCeOp(),
      {{"logits", RandomTensor<double>({6, 9}, -5, 5, 64)}, {"label", labels}});
  auto f = RunOp(
      SoftmaxCeOp(),
      {{"logits", RandomTensor<float>({6, 9}, -5, 5, 64)}, {"label", labels}});
  for (std::string name : {"softmax", "loss"}) {
    auto dv = ToVector<double>(d[name]);
    auto fv = ToVector<float>(f[name]);
    ASSERT_EQ(dv.size(), fv.size());
    for (size_t i = 0; i < dv.size(); ++i)
      EXPECT_NEAR(fv[i], dv[i], 1e-5) << name << " " << i;
  }
}

TEST(SoftmaxWithCrossEntropyOp, CompileTimeShapeKeepsUnknownBatch) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "logits", DataType::kFloat32, Shape{-1, 10});
  AddVarDesc(block, "label", DataType::kInt64, Shape{-1, 1});
  InferShapeAtCompileTime(SoftmaxCeOp(), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "softmax")), Shape({-1, 10}));
  EXPECT_EQ(VarShape(GetVarDesc(*block, "loss")), Shape({-1, 1}));
  EXPECT_EQ(VarDtype(GetVarDesc(*block, "loss")), DataType::kFloat32);
}

using testing::ErrorOf;

TEST(SoftmaxWithCrossEntropyOp, LabelOutOfRangeNamesLabelVar) {
  for (int64_t bad : {10, -3}) {
    std::string msg =
        ErrorOf(SoftmaxCeOp("class_id"),
                {{"logits", RandomTensor<double>({3, 10}, -1, 1, 65)},
                 {"class_id", Labels({0, 9, bad})}});
    ASSERT_FALSE(msg.empty()) << "expected an error for label " << bad;
    EXPECT_NE(msg.find("softmax_with_cross_entropy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("class_id"), std::string::npos) << msg;
    EXPECT_NE(msg.find("row 2"), std::string::npos) << msg;
  }
}

TEST(SoftmaxWithCrossEntropyOp, BadShapesNameVars) {
  std::string msg =
      ErrorOf(SoftmaxCeOp("class_id"),
              {{"logits", RandomTensor<double>({3, 10}, -1, 1, 65)},
               {"class_id", MakeTensor<int64_t>({3, 2}, {0, 0, 0, 0, 0, 0})}});
  ASSERT_FALSE(msg.empty());
  EXPECT_NE(msg.find("class_id"), std::string::npos) << msg;
  EXPECT_NE(msg.find("logits"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 2]"), std::string::npos) << msg;
  msg =
      ErrorOf(SoftmaxCeOp(), {{"logits", RandomTensor<double>({10}, -1, 1, 65)},
                              {"label", Labels({0})}});
  ASSERT_FALSE(msg.empty());
  EXPECT_NE(msg.find("logits"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
