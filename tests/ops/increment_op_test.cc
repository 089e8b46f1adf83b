// increment, floor and cos against naive loops; the numeric gradient of cos.
#include <gtest/gtest.h>

#include <cmath>

#include "src/framework/op_registry.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::RunSteps;
using testing::ToVector;

TEST(IncrementOp, CountsInPlace) {
  auto op =
      MakeOp("increment", {{"X", {"c"}}}, {{"Out", {"c"}}}, {{"step", 2.0f}});
  std::vector<Tensor> nothing(3, MakeTensor<double>({1}, {0.0}));
  auto state =
      RunSteps(op, {{"c", MakeTensor<double>({1}, {-1.0})}}, "unused", nothing);
  EXPECT_EQ(ToVector<double>(state["c"]), std::vector<double>{5.0});
}

TEST(IncrementOp, MoreThanOneElementNamesVar) {
  std::string msg =
      ErrorOf(MakeOp("increment", {{"X", {"c"}}}, {{"Out", {"d"}}}),
              {{"c", MakeTensor<float>({2}, {1.0f, 2.0f})}});
  EXPECT_NE(msg.find("X 'c'"), std::string::npos) << msg;
}

TEST(FloorOp, MatchesNaiveLoop) {
  Tensor x = RandomTensor<double>({17}, -5, 5, 21);
  auto out =
      RunOp(MakeOp("floor", {{"X", {"x"}}}, {{"Out", {"y"}}}), {{"x", x}});
  auto xs = ToVector<double>(x), ys = ToVector<double>(out["y"]);
  for (size_t i = 0; i < xs.size(); ++i) {
    double want = static_cast<double>(static_cast<int64_t>(xs[i]));
    if (want > xs[i]) want -= 1;
    EXPECT_EQ(ys[i], want) << xs[i];
  }
}

TEST(CosOp, MatchesSeriesAndGradient) {
  Tensor x = RandomTensor<double>({3, 5}, -3, 3, 22);
  auto op = MakeOp("cos", {{"X", {"x"}}}, {{"Out", {"y"}}});
  auto xs = ToVector<double>(x),
       ys = ToVector<double>(RunOp(op, {{"x", x}})["y"]);
  for (size_t i = 0; i < xs.size(); ++i) {
    // Taylor series, to 30 terms.
    double term = 1, sum = 1;
    for (int k = 1; k < 30; ++k) {
      term *= -xs[i] * xs[i] / ((2 * k - 1) * (2 * k));
      sum += term;
    }
    EXPECT_NEAR(ys[i], sum, 1e-13) << xs[i];
  }
  EXPECT_TRUE(CheckGradient(op, {{"x", x}}));
}

}  // namespace
}  // namespace fluid
