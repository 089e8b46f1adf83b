// The CUDA kernels of elementwise_pow against its CPU kernels (forward
// and both gradients, float32 and float64), through the checks the
// elementwise ops share (tests/testing/elementwise_cuda_checks.h).
// Every test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include "tests/testing/elementwise_cuda_checks.h"

namespace fluid {
namespace {

using testing::BroadcastCases;

const char kType[] = "elementwise_pow";
const testing::OperandRanges kRanges{0.5, 2, -1.5, 1.5};

TEST(ElementwisePowOpCuda, Broadcasts) {
  REQUIRE_GPU();
  testing::ExpectBroadcastsMatchCpu(kType, BroadcastCases(), 1, -1, kRanges);
}

TEST(ElementwisePowOpCuda, LargeBroadcasts) {
  REQUIRE_GPU();
  testing::ExpectLargeBroadcastsMatchCpu(kType, kRanges);
}

TEST(ElementwisePowOpCuda, InPlace) {
  REQUIRE_GPU();
  testing::ExpectInPlaceMatchesCpu(kType, kRanges);
}

TEST(ElementwisePowOpCuda, GradOneSide) {
  REQUIRE_GPU();
  testing::ExpectOneSidedGradMatchesCpu(kType, kRanges);
}

}  // namespace
}  // namespace fluid
