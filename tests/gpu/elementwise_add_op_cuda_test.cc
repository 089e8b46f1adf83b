// The CUDA kernels of elementwise_add against its CPU kernels (forward
// and both gradients, float32 and float64), through the checks it shares
// with elementwise_mul (tests/testing/elementwise_cuda_checks.h).
// Every test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include "tests/testing/elementwise_cuda_checks.h"

namespace fluid {
namespace {

using testing::BroadcastCases;

TEST(ElementwiseAddOpCuda, Broadcasts) {
  REQUIRE_GPU();
  testing::ExpectBroadcastsMatchCpu("elementwise_add", BroadcastCases(), 1);
}

TEST(ElementwiseAddOpCuda, LargeBroadcasts) {
  REQUIRE_GPU();
  testing::ExpectLargeBroadcastsMatchCpu("elementwise_add");
}

TEST(ElementwiseAddOpCuda, InPlace) {
  REQUIRE_GPU();
  testing::ExpectInPlaceMatchesCpu("elementwise_add");
}

TEST(ElementwiseAddOpCuda, GradOneSide) {
  REQUIRE_GPU();
  testing::ExpectOneSidedGradMatchesCpu("elementwise_add");
}

}  // namespace
}  // namespace fluid
