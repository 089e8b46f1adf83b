// elementwise_sub (Out = X - Y) on the CPU: forward and gradient against
// a naive loop, numeric gradients, float32 against float64
// (tests/testing/elementwise_checks.h).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/testing/elementwise_checks.h"

namespace fluid {
namespace {

using testing::BinaryMath;
using testing::OperandRanges;

const char kType[] = "elementwise_sub";
const OperandRanges kRanges{-1, 1, -1, 1};

BinaryMath Math() {
  return {[](double x, double y) { return x - y; },
          [](double, double) { return 1.0; },
          [](double, double) { return -1.0; }};
}

TEST(ElementwiseSubOp, MatchesNaive) {
  testing::ExpectMatchesNaive(kType, Math(), kRanges, 1);
}

TEST(ElementwiseSubOp, ThreadedMatchesNaive) {
  testing::ExpectMatchesNaive(kType, Math(), kRanges, 4);
}

TEST(ElementwiseSubOp, Gradient) {
  testing::ExpectGradientsCheck(kType, kRanges);
}

TEST(ElementwiseSubOp, FloatMatchesDouble) {
  testing::ExpectFloatMatchesDouble(kType, kRanges);
}

}  // namespace
}  // namespace fluid
