// elementwise_pow (Out = X ^ Y, X positive) on the CPU: forward and gradient
// against a naive loop, numeric gradients, float32 against float64
// (tests/testing/elementwise_checks.h).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/testing/elementwise_checks.h"

namespace fluid {
namespace {

using testing::BinaryMath;
using testing::OperandRanges;

const char kType[] = "elementwise_pow";
const OperandRanges kRanges{0.5, 2, -1.5, 1.5};

BinaryMath Math() {
  return {[](double x, double y) { return std::pow(x, y); },
          [](double x, double y) { return y * std::pow(x, y - 1); },
          [](double x, double y) { return std::pow(x, y) * std::log(x); }};
}

TEST(ElementwisePowOp, MatchesNaive) {
  testing::ExpectMatchesNaive(kType, Math(), kRanges, 1);
}

TEST(ElementwisePowOp, ThreadedMatchesNaive) {
  testing::ExpectMatchesNaive(kType, Math(), kRanges, 4);
}

TEST(ElementwisePowOp, Gradient) {
  testing::ExpectGradientsCheck(kType, kRanges);
}

TEST(ElementwisePowOp, FloatMatchesDouble) {
  testing::ExpectFloatMatchesDouble(kType, kRanges);
}

}  // namespace
}  // namespace fluid
