// The CUDA kernels of elementwise_min against its CPU kernels (forward
// and both gradients, float32 and float64), through the checks the
// elementwise ops share (tests/testing/elementwise_cuda_checks.h).
// Every test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include "tests/testing/elementwise_cuda_checks.h"

namespace fluid {
namespace {

using testing::BroadcastCases;

const char kType[] = "elementwise_min";
const testing::OperandRanges kRanges{-1, 1, -1, 1};

TEST(ElementwiseMinOpCuda, Broadcasts) {
  REQUIRE_GPU();
  testing::ExpectBroadcastsMatchCpu(kType, BroadcastCases(), 1, -1, kRanges);
}

TEST(ElementwiseMinOpCuda, LargeBroadcasts) {
  REQUIRE_GPU();
  testing::ExpectLargeBroadcastsMatchCpu(kType, kRanges);
}

TEST(ElementwiseMinOpCuda, InPlace) {
  REQUIRE_GPU();
  testing::ExpectInPlaceMatchesCpu(kType, kRanges);
}

TEST(ElementwiseMinOpCuda, GradOneSide) {
  REQUIRE_GPU();
  testing::ExpectOneSidedGradMatchesCpu(kType, kRanges);
}

}  // namespace
}  // namespace fluid
