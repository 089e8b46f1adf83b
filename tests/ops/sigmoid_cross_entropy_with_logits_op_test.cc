#include <gtest/gtest.h>

#include <cmath>
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

proto::OpDesc SigmoidCe(bool normalize = false, int ignore = -100) {
  return MakeOp("sigmoid_cross_entropy_with_logits",
                {{"X", {"x"}}, {"Label", {"label"}}}, {{"Out", {"out"}}},
                {{"normalize", normalize}, {"ignore_index", int32_t{ignore}}});
}

// The textbook form, -z log(p) - (1 - z) log(1 - p) with p = sigmoid(x),
// in long double: fine for moderate logits.
double Naive(double x, double z) {
  long double p = 1.0L / (1.0L + std::exp(-(long double)x));
  return static_cast<double>(-z * std::log(p) - (1 - z) * std::log(1 - p));
}

TEST(SigmoidCrossEntropyWithLogitsOp, MatchesTextbookForm) {
  Tensor x = RandomTensor<double>({4, 5}, -6, 6, 1);
  Tensor z = RandomTensor<double>({4, 5}, 0, 1, 2);
  Tensor out = RunOp(SigmoidCe(), {{"x", x}, {"label", z}})["out"];
  ASSERT_EQ(out.shape(), Shape({4, 5}));
  auto xs = ToVector<double>(x), zs = ToVector<double>(z);
  auto got = ToVector<double>(out);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], Naive(xs[i], zs[i]), 1e-12) << i;
}

// Large logits: the stable form stays finite and exact where the textbook
// one overflows or cancels.
TEST(SigmoidCrossEntropyWithLogitsOp, StableForLargeLogits) {
  Tensor x = MakeTensor<double>({4}, {800, -800, 40, -40});
  Tensor z = MakeTensor<double>({4}, {0, 1, 1, 0});
  auto got =
      ToVector<double>(RunOp(SigmoidCe(), {{"x", x}, {"label", z}})["out"]);
  EXPECT_DOUBLE_EQ(got[0], 800);
  EXPECT_DOUBLE_EQ(got[1], 800);
  EXPECT_NEAR(got[2], std::exp(-40.0), 1e-30);
  EXPECT_NEAR(got[3], std::exp(-40.0), 1e-30);
}

TEST(SigmoidCrossEntropyWithLogitsOp, IgnoreIndexAndNormalize) {
  Tensor x = RandomTensor<double>({2, 3}, -2, 2, 3);
  Tensor z = MakeTensor<double>({2, 3}, {1, -1, 0, 0.5, -1, 1});
  auto plain = ToVector<double>(
      RunOp(SigmoidCe(false, -1), {{"x", x}, {"label", z}})["out"]);
  auto norm = ToVector<double>(
      RunOp(SigmoidCe(true, -1), {{"x", x}, {"label", z}})["out"]);
  auto xs = ToVector<double>(x), zs = ToVector<double>(z);
  for (size_t i = 0; i < plain.size(); ++i) {
    const double want = zs[i] == -1 ? 0.0 : Naive(xs[i], zs[i]);
    EXPECT_NEAR(plain[i], want, 1e-12) << i;
    EXPECT_NEAR(norm[i], want / 4, 1e-12) << i;  // 4 elements not ignored
  }
}

TEST(SigmoidCrossEntropyWithLogitsOp, Gradient) {
  GradCheckOptions o;
  o.wrt = {"x"};
  for (bool normalize : {false, true}) {
    Tensor z = RandomTensor<double>({3, 4}, 0, 1, 5);
    EXPECT_TRUE(CheckGradient(
        SigmoidCe(normalize),
        {{"x", RandomTensor<double>({3, 4}, -3, 3, 4)}, {"label", z}}, o))
        << normalize;
  }
  Tensor z = MakeTensor<double>({2, 2}, {1, 5, 0, 5});
  EXPECT_TRUE(CheckGradient(
      SigmoidCe(true, 5),
      {{"x", RandomTensor<double>({2, 2}, -3, 3, 6)}, {"label", z}}, o));
}

TEST(SigmoidCrossEntropyWithLogitsOp, LabelMustBeLikeX) {
  std::string msg =
      ErrorOf(SigmoidCe(), {{"x", RandomTensor<double>({2, 3}, -1, 1, 1)},
                            {"label", RandomTensor<double>({3, 2}, 0, 1, 2)}});
  EXPECT_NE(msg.find("Label 'label' has shape [3, 2]"), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace fluid
