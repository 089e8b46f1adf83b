// Checks of gradient inputs that the kernels of several ops share, CPU and
// CUDA alike; defined in activation_op.cc. Free of Eigen so that nvcc can
// compile the CUDA kernels that include it.
#pragma once

#include <string>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// Throws, naming the op and both vars, unless `dout` (Out@GRAD) has the
// shape of `out` (the forward Out): the gradient ops that read Out
// (activations, softmax_grad).
void CheckOutGradLikeOut(const ExecutionContext& ctx, const Tensor& out,
                         const Tensor& dout);

// The same for the gradient ops that read the forward input `slot` (X)
// instead of Out: `dout` must have the shape of `t`.
void CheckOutGradLike(const ExecutionContext& ctx, const std::string& slot,
                      const Tensor& t, const Tensor& dout);

}  // namespace ops
}  // namespace fluid
