// Checks a CUDA kernel against the op's CPU kernel on the same inputs: the
// forward outputs, and every output of the op's generated grad ops fed the
// same random output gradients. Element i passes when
// |cuda - cpu| <= tolerance * max(|cuda|, |cpu|, 1); the tolerance defaults
// to 1e-12 for float64 and 1e-5 for float32.
//
// Every test using it starts with REQUIRE_GPU(), which skips (saying why)
// when the build has no CUDA or no device is visible.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/gradient_checker.h"
#include "tests/testing/require_gpu.h"

namespace fluid {
namespace testing {

// The dtypes every float kernel is registered for, on both places.
inline constexpr DataType kFloatTypes[] = {DataType::kFloat32,
                                           DataType::kFloat64};

struct CudaCheckOptions {
  double tolerance = -1;  // < 0: by dtype
  bool grad = true;       // also compare the grad ops
  uint64_t seed = 4321;   // for the output gradients
  // Outputs not compared (e.g. scratch outputs with unspecified contents).
  std::vector<std::string> skip;
};

// Compares two tensors elementwise as above; the message names `what`.
::testing::AssertionResult TensorsClose(const Tensor& cpu, const Tensor& cuda,
                                        double tolerance,
                                        const std::string& what);

::testing::AssertionResult CudaMatchesCpu(const proto::OpDesc& op,
                                          const TensorMap& inputs,
                                          const CudaCheckOptions& options = {});

// For optimizer ops: RunSteps on both places from the same state and
// gradients, comparing the final state.
::testing::AssertionResult CudaStepsMatchCpu(const proto::OpDesc& op,
                                             const TensorMap& state,
                                             const std::string& grad_var,
                                             const std::vector<Tensor>& grads,
                                             double tolerance = -1);

}  // namespace testing
}  // namespace fluid
