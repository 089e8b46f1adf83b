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

// ---- soft_label: Label holds probabilities of Logits' shape ----

proto::OpDesc SoftLabelOp() {
  proto::OpDesc op = SoftmaxCeOp();
  SetOpAttr(&op, "soft_label", true);
  return op;
}

// Label rows of positive probabilities summing to 1 (`sum` to scale them
// to another total).
Tensor SoftLabels(int n, int c, uint64_t seed, double sum = 1.0) {
  std::vector<double> z =
      ToVector<double>(RandomTensor<double>({n, c}, 0.1, 1.0, seed));
  for (int i = 0; i < n; ++i) {
    double total = 0;
    for (int j = 0; j < c; ++j) total += z[i * c + j];
    for (int j = 0; j < c; ++j) z[i * c + j] *= sum / total;
  }
  return MakeTensor<double>({n, c}, z);
}

// The textbook loss in long double: -sum_j z_j log softmax_j.
std::vector<double> NaiveSoftLoss(const std::vector<double>& x,
                                  const std::vector<double>& z, int n, int c) {
  std::vector<double> loss(n);
  for (int i = 0; i < n; ++i) {
    long double sum = 0, l = 0;
    for (int j = 0; j < c; ++j) sum += std::exp((long double)x[i * c + j]);
    for (int j = 0; j < c; ++j)
      l -= z[i * c + j] * std::log(std::exp((long double)x[i * c + j]) / sum);
    loss[i] = static_cast<double>(l);
  }
  return loss;
}

TEST(SoftmaxWithCrossEntropyOp, SoftLabelMatchesNaive) {
  for (auto nc : std::vector<std::pair<int, int>>{
           {1, 1}, {1, 10}, {3, 7}, {64, 10}, {3, 1001}}) {
    int n = nc.first, c = nc.second;
    SCOPED_TRACE("N " + std::to_string(n) + " C " + std::to_string(c));
    Tensor x = RandomTensor<double>({n, c}, -4, 4, 71);
    Tensor z = SoftLabels(n, c, 72);
    for (int threads : {1, 2}) {
      auto out = RunOp(SoftLabelOp(), {{"logits", x}, {"label", z}}, threads);
      ASSERT_EQ(out["loss"].shape(), Shape({n, 1}));
      std::vector<double> sm, hard_loss;
      NaiveSoftmaxCe(ToVector<double>(x), std::vector<int64_t>(n, 0), n, c, &sm,
                     &hard_loss);
      auto want = NaiveSoftLoss(ToVector<double>(x), ToVector<double>(z), n, c);
      auto got_sm = ToVector<double>(out["softmax"]);
      auto got = ToVector<double>(out["loss"]);
      for (size_t i = 0; i < sm.size(); ++i)
        ASSERT_NEAR(got_sm[i], sm[i], 1e-14) << "softmax " << i;
      for (int i = 0; i < n; ++i) ASSERT_NEAR(got[i], want[i], 1e-12) << i;
    }
  }
}

// A one-hot soft label is the hard label's loss.
TEST(SoftmaxWithCrossEntropyOp, OneHotSoftLabelIsTheHardLabel) {
  const int n = 4, c = 6;
  Tensor x = RandomTensor<double>({n, c}, -3, 3, 73);
  auto ids = SomeLabels(n, c);
  std::vector<double> hot(n * c, 0.0);
  for (int i = 0; i < n; ++i) hot[i * c + ids[i]] = 1.0;
  auto soft = ToVector<double>(RunOp(
      SoftLabelOp(),
      {{"logits", x}, {"label", MakeTensor<double>({n, c}, hot)}})["loss"]);
  auto hard = ToVector<double>(
      RunOp(SoftmaxCeOp(), {{"logits", x}, {"label", Labels(ids)}})["loss"]);
  for (int i = 0; i < n; ++i) EXPECT_NEAR(soft[i], hard[i], 1e-13) << i;
}

TEST(SoftmaxWithCrossEntropyOp, SoftLabelStableForHugeLogits) {
  // The softmax of the second class underflows to 0; its label weight
  // still counts (no log(0), no NaN).
  Tensor x = MakeTensor<double>({1, 2}, {1000, 0});
  Tensor z = MakeTensor<double>({1, 2}, {0.5, 0.5});
  auto loss = ToVector<double>(
      RunOp(SoftLabelOp(), {{"logits", x}, {"label", z}})["loss"]);
  EXPECT_NEAR(loss[0], 500.0, 1e-9);
}

TEST(SoftmaxWithCrossEntropyOp, SoftLabelGradient) {
  // Label rows summing to 1 (Fluid's case) and to other totals: the
  // gradient is exact for both. Label gets no gradient.
  for (double total : {1.0, 0.3, 2.5}) {
    for (auto nc :
         std::vector<std::pair<int, int>>{{1, 1}, {1, 4}, {3, 5}, {7, 10}}) {
      SCOPED_TRACE("N " + std::to_string(nc.first) + " C " +
                   std::to_string(nc.second) + " total " +
                   std::to_string(total));
      GradCheckOptions opt;
      opt.of = {"loss"};
      opt.wrt = {"logits"};
      opt.threads = 2;
      EXPECT_TRUE(CheckGradient(
          SoftLabelOp(),
          {{"logits", RandomTensor<double>({nc.first, nc.second}, -3, 3, 74)},
           {"label", SoftLabels(nc.first, nc.second, 75, total)}},
          opt));
    }
  }
}

TEST(SoftmaxWithCrossEntropyOp, SoftLabelFloatMatchesDouble) {
  Tensor zd = SoftLabels(6, 9, 76);
  std::vector<float> zf;
  for (double v : ToVector<double>(zd)) zf.push_back(static_cast<float>(v));
  auto d = RunOp(
      SoftLabelOp(),
      {{"logits", RandomTensor<double>({6, 9}, -5, 5, 77)}, {"label", zd}});
  auto f =
      RunOp(SoftLabelOp(), {{"logits", RandomTensor<float>({6, 9}, -5, 5, 77)},
                            {"label", MakeTensor<float>({6, 9}, zf)}});
  auto dv = ToVector<double>(d["loss"]);
  auto fv = ToVector<float>(f["loss"]);
  for (size_t i = 0; i < dv.size(); ++i) EXPECT_NEAR(fv[i], dv[i], 1e-5) << i;
}

TEST(SoftmaxWithCrossEntropyOp, SoftLabelBadLabelNamesVars) {
  // An int64 class-id label, and a float label of the wrong shape.
  std::string msg = ErrorOf(
      SoftLabelOp(), {{"logits", RandomTensor<double>({3, 4}, -1, 1, 78)},
                      {"label", Labels({0, 1, 2})}});
  EXPECT_NE(msg.find("with soft_label, Label 'label'"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("'logits'"), std::string::npos) << msg;
  msg = ErrorOf(SoftLabelOp(),
                {{"logits", RandomTensor<double>({3, 4}, -1, 1, 78)},
                 {"label", SoftLabels(3, 5, 79)}});
  EXPECT_NE(msg.find("[3, 5]"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
