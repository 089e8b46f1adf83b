// What softmax's CPU kernels (softmax_op.cc) and CUDA kernels
// (softmax_op.cu) compute on the host, defined once in softmax_op.cc. Free
// of Eigen so that nvcc can compile the CUDA kernels that include it.
#pragma once

#include <cstdint>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// softmax_grad's inputs, Out@GRAD checked to be shaped like Out, and the
// rows and row length of Out's last-dim view.
struct SoftmaxGradArgs {
  const Tensor& out;
  const Tensor& dout;
  int64_t rows;
  int64_t cols;
};

SoftmaxGradArgs ReadSoftmaxGradArgs(const ExecutionContext& ctx);

// Rows and row length of the last-dim view of `t`.
void SoftmaxRowsCols(const Tensor& t, int64_t* rows, int64_t* cols);

}  // namespace ops
}  // namespace fluid
