// CUDA kernels for elementwise_max and elementwise_max_grad (schemas in
// elementwise_max_op.cc; math in elementwise_functors.h).
#include "ops/elementwise_op_function.cuh"

namespace fluid {
namespace ops {

REGISTER_KERNEL(elementwise_max, kCUDA, float,
                (cuda::ElementwiseKernel<float, MaxFunctor>));
REGISTER_KERNEL(elementwise_max, kCUDA, double,
                (cuda::ElementwiseKernel<double, MaxFunctor>));
REGISTER_KERNEL(elementwise_max_grad, kCUDA, float,
                (cuda::ElementwiseGradKernel<float, MaxFunctor>));
REGISTER_KERNEL(elementwise_max_grad, kCUDA, double,
                (cuda::ElementwiseGradKernel<double, MaxFunctor>));
REGISTER_KERNEL(elementwise_max, kCUDA, bfloat16,
                (cuda::ElementwiseKernel<bfloat16, MaxFunctor>));
REGISTER_KERNEL(elementwise_max, kCUDA, float16,
                (cuda::ElementwiseKernel<float16, MaxFunctor>));
REGISTER_KERNEL(elementwise_max_grad, kCUDA, bfloat16,
                (cuda::ElementwiseGradKernel<bfloat16, MaxFunctor>));
REGISTER_KERNEL(elementwise_max_grad, kCUDA, float16,
                (cuda::ElementwiseGradKernel<float16, MaxFunctor>));

}  // namespace ops
}  // namespace fluid
