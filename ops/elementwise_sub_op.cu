// CUDA kernels for elementwise_sub and elementwise_sub_grad (schemas in
// elementwise_sub_op.cc; math in elementwise_functors.h).
#include "ops/elementwise_op_function.cuh"

namespace fluid {
namespace ops {

REGISTER_KERNEL(elementwise_sub, kCUDA, float,
                (cuda::ElementwiseKernel<float, SubFunctor>));
REGISTER_KERNEL(elementwise_sub, kCUDA, double,
                (cuda::ElementwiseKernel<double, SubFunctor>));
REGISTER_KERNEL(elementwise_sub_grad, kCUDA, float,
                (cuda::ElementwiseGradKernel<float, SubFunctor>));
REGISTER_KERNEL(elementwise_sub_grad, kCUDA, double,
                (cuda::ElementwiseGradKernel<double, SubFunctor>));
REGISTER_KERNEL(elementwise_sub, kCUDA, bfloat16,
                (cuda::ElementwiseKernel<bfloat16, SubFunctor>));
REGISTER_KERNEL(elementwise_sub, kCUDA, float16,
                (cuda::ElementwiseKernel<float16, SubFunctor>));
REGISTER_KERNEL(elementwise_sub_grad, kCUDA, bfloat16,
                (cuda::ElementwiseGradKernel<bfloat16, SubFunctor>));
REGISTER_KERNEL(elementwise_sub_grad, kCUDA, float16,
                (cuda::ElementwiseGradKernel<float16, SubFunctor>));

}  // namespace ops
}  // namespace fluid
