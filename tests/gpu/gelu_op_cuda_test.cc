// The CUDA kernels of gelu (exact and tanh forms) against its CPU kernels:
// forward and gradient, float32 and float64. Every test skips, saying why,
// without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::RandomTensor;

template <typename T>
void CheckGelu() {
  uint64_t seed = 700;
  for (bool approximate : {false, true}) {
    for (const Shape& s : {Shape({1}), Shape({3, 7}), Shape({5, 1000})}) {
      SCOPED_TRACE(::testing::Message() << s << " approximate=" << approximate);
      auto op = MakeOp("gelu", {{"X", {"x"}}}, {{"Out", {"out"}}},
                       {{"approximate", approximate}});
      EXPECT_TRUE(
          CudaMatchesCpu(op, {{"x", RandomTensor<T>(s, -5, 5, seed++)}}));
    }
  }
}

TEST(GeluOpCuda, Float) {
  REQUIRE_GPU();
  CheckGelu<float>();
}

TEST(GeluOpCuda, Double) {
  REQUIRE_GPU();
  CheckGelu<double>();
}

}  // namespace
}  // namespace fluid
