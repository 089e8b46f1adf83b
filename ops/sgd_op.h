// What sgd's CPU kernel (sgd_op.cc) and CUDA kernel (sgd_op.cu) read and
// check on the host, defined once in sgd_op.cc. Free of Eigen so that nvcc
// can compile the CUDA kernel that includes it.
#pragma once

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// Param and Grad, checked to hold one element count.
struct SgdInputs {
  const Tensor& param;
  const Tensor& grad;
};

SgdInputs GetSgdInputs(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
