// CUDA kernel for adagrad (schema and update rule in adagrad_op.cc and
// state_optimizer.h).
#include "ops/cuda/state_optimizer.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void AdagradKernel(const ExecutionContext& ctx) {
  cuda::StateOptimizerCudaKernel<T, AdagradFunctor<T>>(ctx);
}

}  // namespace

REGISTER_FLOAT_KERNELS(adagrad, kCUDA, AdagradKernel);

}  // namespace ops
}  // namespace fluid
