// CUDA kernels for elementwise_min and elementwise_min_grad (schemas in
// elementwise_min_op.cc; math in elementwise_functors.h).
#include "ops/elementwise_op_function.cuh"

namespace fluid {
namespace ops {

REGISTER_KERNEL(elementwise_min, kCUDA, float,
                (cuda::ElementwiseKernel<float, MinFunctor>));
REGISTER_KERNEL(elementwise_min, kCUDA, double,
                (cuda::ElementwiseKernel<double, MinFunctor>));
REGISTER_KERNEL(elementwise_min_grad, kCUDA, float,
                (cuda::ElementwiseGradKernel<float, MinFunctor>));
REGISTER_KERNEL(elementwise_min_grad, kCUDA, double,
                (cuda::ElementwiseGradKernel<double, MinFunctor>));
REGISTER_KERNEL(elementwise_min, kCUDA, bfloat16,
                (cuda::ElementwiseKernel<bfloat16, MinFunctor>));
REGISTER_KERNEL(elementwise_min, kCUDA, float16,
                (cuda::ElementwiseKernel<float16, MinFunctor>));
REGISTER_KERNEL(elementwise_min_grad, kCUDA, bfloat16,
                (cuda::ElementwiseGradKernel<bfloat16, MinFunctor>));
REGISTER_KERNEL(elementwise_min_grad, kCUDA, float16,
                (cuda::ElementwiseGradKernel<float16, MinFunctor>));

}  // namespace ops
}  // namespace fluid
