// What adam's CPU kernel (adam_op.cc) and CUDA kernel (adam_op.cu) read and
// check on the host, defined once in adam_op.cc. Free of Eigen so that nvcc
// can compile the CUDA kernel that includes it.
#pragma once

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// adam's attrs, widened to double: the step scalars are computed in double
// (see AdamFunctor in optimizer_functors.h).
struct AdamAttrs {
  double beta1, beta2, epsilon, weight_decay;
  bool decoupled;  // decoupled_weight_decay: AdamW
};

AdamAttrs ReadAdamAttrs(const ExecutionContext& ctx);

// The per-element inputs, checked to hold one element count.
struct AdamInputs {
  const Tensor& param;
  const Tensor& grad;
  const Tensor& moment1;
  const Tensor& moment2;
};

AdamInputs GetAdamInputs(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
