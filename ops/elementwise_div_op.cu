// CUDA kernels for elementwise_div and elementwise_div_grad (schemas in
// elementwise_div_op.cc; math in elementwise_functors.h).
#include "ops/elementwise_op_function.cuh"

namespace fluid {
namespace ops {

REGISTER_KERNEL(elementwise_div, kCUDA, float,
                (cuda::ElementwiseKernel<float, DivFunctor>));
REGISTER_KERNEL(elementwise_div, kCUDA, double,
                (cuda::ElementwiseKernel<double, DivFunctor>));
REGISTER_KERNEL(elementwise_div_grad, kCUDA, float,
                (cuda::ElementwiseGradKernel<float, DivFunctor>));
REGISTER_KERNEL(elementwise_div_grad, kCUDA, double,
                (cuda::ElementwiseGradKernel<double, DivFunctor>));
REGISTER_KERNEL(elementwise_div, kCUDA, bfloat16,
                (cuda::ElementwiseKernel<bfloat16, DivFunctor>));
REGISTER_KERNEL(elementwise_div, kCUDA, float16,
                (cuda::ElementwiseKernel<float16, DivFunctor>));
REGISTER_KERNEL(elementwise_div_grad, kCUDA, bfloat16,
                (cuda::ElementwiseGradKernel<bfloat16, DivFunctor>));
REGISTER_KERNEL(elementwise_div_grad, kCUDA, float16,
                (cuda::ElementwiseGradKernel<float16, DivFunctor>));

}  // namespace ops
}  // namespace fluid
