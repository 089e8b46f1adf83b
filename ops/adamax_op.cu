// CUDA kernel for adamax (schema and update rule in adamax_op.cc and
// state_optimizer.h).
#include "ops/cuda/state_optimizer.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void AdamaxKernel(const ExecutionContext& ctx) {
  cuda::StateOptimizerCudaKernel<T, AdamaxFunctor<T>>(ctx);
}

}  // namespace

REGISTER_FLOAT_KERNELS(adamax, kCUDA, AdamaxKernel);

}  // namespace ops
}  // namespace fluid
