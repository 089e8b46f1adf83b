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
TEST(ElementwiseMinOp, TieGoesToY) { testing::ExpectTieGoesToY(kType); }

}  // namespace
}  // namespace fluid
