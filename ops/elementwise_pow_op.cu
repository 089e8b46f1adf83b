// CUDA kernels for elementwise_pow and elementwise_pow_grad (schemas in
// elementwise_pow_op.cc; math in elementwise_functors.h).
#include "ops/elementwise_op_function.cuh"

namespace fluid {
namespace ops {

REGISTER_KERNEL(elementwise_pow, kCUDA, float,
                (cuda::ElementwiseKernel<float, PowFunctor>));
REGISTER_KERNEL(elementwise_pow, kCUDA, double,
                (cuda::ElementwiseKernel<double, PowFunctor>));
REGISTER_KERNEL(elementwise_pow_grad, kCUDA, float,
                (cuda::ElementwiseGradKernel<float, PowFunctor>));
REGISTER_KERNEL(elementwise_pow_grad, kCUDA, double,
                (cuda::ElementwiseGradKernel<double, PowFunctor>));

}  // namespace ops
}  // namespace fluid
