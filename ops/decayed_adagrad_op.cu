// CUDA kernel for decayed_adagrad (schema and update rule in
// decayed_adagrad_op.cc and state_optimizer.h).
#include "ops/cuda/state_optimizer.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void DecayedAdagradKernel(const ExecutionContext& ctx) {
  cuda::StateOptimizerCudaKernel<T, DecayedAdagradFunctor<T>>(ctx);
}

}  // namespace

REGISTER_FLOAT_KERNELS(decayed_adagrad, kCUDA, DecayedAdagradKernel);

}  // namespace ops
}  // namespace fluid
