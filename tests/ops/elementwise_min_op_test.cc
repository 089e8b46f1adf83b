// elementwise_min (Out = min(X, Y)) on the CPU: forward and gradient against
// a naive loop, numeric gradients, float32 against float64
// (tests/testing/elementwise_checks.h).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/testing/elementwise_checks.h"

namespace fluid {
namespace {

using testing::BinaryMath;
using testing::ElementwiseOp;
using testing::OperandRanges;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

const char kType[] = "elementwise_min";
const OperandRanges kRanges{-1, 1, -1, 1};

BinaryMath Math() {
  return {[](double x, double y) { return x < y ? x : y; },
          [](double x, double y) { return x < y ? 1.0 : 0.0; },
          [](double x, double y) { return x < y ? 0.0 : 1.0; }};
}

TEST(ElementwiseMinOp, MatchesNaive) {
  testing::ExpectMatchesNaive(kType, Math(), kRanges, 1);
}

TEST(ElementwiseMinOp, ThreadedMatchesNaive) {
  testing::ExpectMatchesNaive(kType, Math(), kRanges, 4);
}

TEST(ElementwiseMinOp, Gradient) {
  testing::ExpectGradientsCheck(kType, kRanges);
}

TEST(ElementwiseMinOp, FloatMatchesDouble) {
  testing::ExpectFloatMatchesDouble(kType, kRanges);
}

// A tie (X == Y) sends the whole gradient to Y, as Fluid does.
TEST(ElementwiseMinOp, TieGoesToY) {
  Tensor y = RandomTensor<double>({3}, -1, 1, 8);
  auto yv = ToVector<double>(y);
  std::vector<double> xv(6);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = yv[i % 3];
  Tensor x = testing::MakeTensor<double>({2, 3}, xv);
  Tensor g = RandomTensor<double>({2, 3}, -1, 1, 9);
  auto gv = ToVector<double>(g);
  auto out = ToVector<double>(
      RunOp(ElementwiseOp("elementwise_min", -1), {{"x", x}, {"y", y}})["out"]);
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(out[i], xv[i]) << i;
  auto grad = MakeOp("elementwise_min_grad",
                     {{"X", {"x"}}, {"Y", {"y"}}, {"Out@GRAD", {"g"}}},
                     {{"X@GRAD", {"dx"}}, {"Y@GRAD", {"dy"}}});
  auto res = RunOp(grad, {{"x", x}, {"y", y}, {"g", g}});
  auto dxv = ToVector<double>(res["dx"]);
  auto dyv = ToVector<double>(res["dy"]);
  for (size_t i = 0; i < dxv.size(); ++i) EXPECT_EQ(dxv[i], 0.0) << i;
  for (size_t j = 0; j < 3; ++j)
    EXPECT_DOUBLE_EQ(dyv[j], gv[j] + gv[j + 3]) << j;
}

}  // namespace
}  // namespace fluid
