// The CUDA kernels of elementwise_mul against its CPU kernels (forward
// and both gradients, float32 and float64), through the checks it shares
// with elementwise_add (tests/testing/elementwise_cuda_checks.h).
// Every test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include "tests/testing/elementwise_cuda_checks.h"

namespace fluid {
namespace {

using testing::BroadcastCases;

TEST(ElementwiseMulOpCuda, Broadcasts) {
  REQUIRE_GPU();
  testing::ExpectBroadcastsMatchCpu("elementwise_mul", BroadcastCases(), 1);
}

TEST(ElementwiseMulOpCuda, LargeBroadcasts) {
  REQUIRE_GPU();
  testing::ExpectLargeBroadcastsMatchCpu("elementwise_mul");
}

TEST(ElementwiseMulOpCuda, InPlace) {
  REQUIRE_GPU();
  testing::ExpectInPlaceMatchesCpu("elementwise_mul");
}

TEST(ElementwiseMulOpCuda, GradOneSide) {
  REQUIRE_GPU();
  testing::ExpectOneSidedGradMatchesCpu("elementwise_mul");
}

}  // namespace
}  // namespace fluid
