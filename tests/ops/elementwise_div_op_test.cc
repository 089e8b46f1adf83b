// elementwise_div (Out = X / Y, Y kept away from 0) on the CPU: forward and
// gradient against a naive loop, numeric gradients, float32 against float64
// (tests/testing/elementwise_checks.h).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/testing/elementwise_checks.h"

namespace fluid {
namespace {

using testing::BinaryMath;
using testing::OperandRanges;

const char kType[] = "elementwise_div";
const OperandRanges kRanges{-1, 1, 0.5, 2};

BinaryMath Math() {
  return {[](double x, double y) { return x / y; },
          [](double, double y) { return 1 / y; },
          [](double x, double y) { return -x / (y * y); }};
}

TEST(ElementwiseDivOp, MatchesNaive) {
  testing::ExpectMatchesNaive(kType, Math(), kRanges, 1);
}

TEST(ElementwiseDivOp, ThreadedMatchesNaive) {
  testing::ExpectMatchesNaive(kType, Math(), kRanges, 4);
}

TEST(ElementwiseDivOp, Gradient) {
  testing::ExpectGradientsCheck(kType, kRanges);
}

TEST(ElementwiseDivOp, FloatMatchesDouble) {
  testing::ExpectFloatMatchesDouble(kType, kRanges);
}

}  // namespace
}  // namespace fluid
