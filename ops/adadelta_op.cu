// CUDA kernel for adadelta (schema and update rule in adadelta_op.cc and
// state_optimizer.h).
#include "ops/cuda/state_optimizer.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void AdadeltaKernel(const ExecutionContext& ctx) {
  cuda::StateOptimizerCudaKernel<T, AdadeltaFunctor<T>>(ctx);
}

}  // namespace

REGISTER_FLOAT_KERNELS(adadelta, kCUDA, AdadeltaKernel);

}  // namespace ops
}  // namespace fluid
