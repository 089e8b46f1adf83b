// What mean's CPU kernels (mean_op.cc) and CUDA kernels (mean_op.cu) read
// and check on the host, defined once in mean_op.cc. Free of Eigen so that
// nvcc can compile the CUDA kernels that include it.
#pragma once

#include <cstdint>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// mean: X, checked to hold at least one element.
const Tensor& GetMeanInput(const ExecutionContext& ctx);

// mean_grad's inputs: Out@GRAD, checked to hold one element, and the
// element count of X, which it is divided by.
struct MeanGradArgs {
  const Tensor& dout;
  int64_t numel;
};

MeanGradArgs ReadMeanGradArgs(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
