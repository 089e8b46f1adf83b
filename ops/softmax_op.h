// What softmax's CPU kernels (softmax_op.cc) and CUDA kernels
// (softmax_op.cu) compute on the host, defined once in softmax_op.cc. Free
// of Eigen so that nvcc can compile the CUDA kernels that include it.
#pragma once

#include <cstdint>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// A tensor viewed as [outer, n, inner] around the softmax axis (of n
// elements): inner is 1 for the last axis, where each softmax is one
// contiguous row; otherwise a softmax's elements lie `inner` apart.
struct SoftmaxDims {
  int64_t outer = 0;
  int64_t n = 0;
  int64_t inner = 1;
};

// The view of `t` around the op's `axis` attr (negative: from the end),
// checked to name one of t's dims.
SoftmaxDims GetSoftmaxDims(const ExecutionContext& ctx, const Tensor& t);

// softmax_grad's inputs, Out@GRAD checked to be shaped like Out, and Out's
// view around the axis.
struct SoftmaxGradArgs {
  const Tensor& out;
  const Tensor& dout;
  SoftmaxDims dims;
};

SoftmaxGradArgs ReadSoftmaxGradArgs(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
