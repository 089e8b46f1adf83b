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

}  // namespace ops
}  // namespace fluid
