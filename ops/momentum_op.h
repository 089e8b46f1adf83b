// What momentum's CPU kernel (momentum_op.cc) and CUDA kernel
// (momentum_op.cu) read and check on the host, defined once in
// momentum_op.cc. Free of Eigen so that nvcc can compile the CUDA kernel
// that includes it.
#pragma once

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// momentum's per-element inputs, checked to hold one element count, and
// its attrs. The learning rate is read apart: on the host by the CPU
// kernel, on the device by the CUDA kernel.
struct MomentumArgs {
  const Tensor& param;
  const Tensor& grad;
  const Tensor& velocity;
  float mu;
  float weight_decay;
  bool nesterov;
};

MomentumArgs ReadMomentumArgs(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
