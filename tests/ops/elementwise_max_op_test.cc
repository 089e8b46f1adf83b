// elementwise_max (Out = max(X, Y)) on the CPU: forward and gradient against
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

const char kType[] = "elementwise_max";
const OperandRanges kRanges{-1, 1, -1, 1};

BinaryMath Math() {
  return {[](double x, double y) { return x > y ? x : y; },
          [](double x, double y) { return x > y ? 1.0 : 0.0; },
          [](double x, double y) { return x > y ? 0.0 : 1.0; }};
}

TEST(ElementwiseMaxOp, MatchesNaive) {
  testing::ExpectMatchesNaive(kType, Math(), kRanges, 1);
}

TEST(ElementwiseMaxOp, ThreadedMatchesNaive) {
  testing::ExpectMatchesNaive(kType, Math(), kRanges, 4);
}

TEST(ElementwiseMaxOp, Gradient) {
  testing::ExpectGradientsCheck(kType, kRanges);
}

TEST(ElementwiseMaxOp, FloatMatchesDouble) {
  testing::ExpectFloatMatchesDouble(kType, kRanges);
}

// A tie (X == Y) sends the whole gradient to Y, as Fluid does.
TEST(ElementwiseMaxOp, TieGoesToY) { testing::ExpectTieGoesToY(kType); }

}  // namespace
}  // namespace fluid
