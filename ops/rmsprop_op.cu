// CUDA kernel for rmsprop (schema and update rule in rmsprop_op.cc and
// state_optimizer.h).
#include "ops/cuda/state_optimizer.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void RmspropKernel(const ExecutionContext& ctx) {
  cuda::StateOptimizerCudaKernel<T, RmspropFunctor<T>>(ctx);
}

}  // namespace

REGISTER_FLOAT_KERNELS(rmsprop, kCUDA, RmspropKernel);

}  // namespace ops
}  // namespace fluid
