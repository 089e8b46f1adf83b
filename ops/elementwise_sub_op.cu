// CUDA kernels for elementwise_sub and elementwise_sub_grad (schemas in
// elementwise_sub_op.cc; math in elementwise_functors.h).
#include "ops/elementwise_op_function.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct NegatedDout {
  const T* dout;
  __device__ ComputeType<T> operator()(int64_t i) const {
    return -ToCompute(dout[i]);
  }
};

// dX = dOut; dY = the sum of -dOut over Y's broadcast dims. Reads the
// forward X and Y for their shapes only (see elementwise_sub_op.cc).
template <typename T>
void ElementwiseSubGradKernel(const ExecutionContext& ctx) {
  const auto& [x, y, dout, d] = ReadElementwiseGradArgs(ctx);
  const auto& dev = cuda::Dev(ctx);
  if (Tensor* dx = ctx.Output(GradSlot("X")))
    cuda::CopyAsync(dev, dx->mutable_data<T>(ctx.place()), dout.data<T>(),
                    sizeof(T) * dout.numel());
  if (Tensor* dy = ctx.Output(GradSlot("Y")))
    cuda::ReduceTermToY<T>(dev, d, NegatedDout<T>{dout.data<T>()},
                           dy->mutable_data<T>(ctx.place()));
}

}  // namespace

REGISTER_KERNEL(elementwise_sub, kCUDA, float,
                (cuda::ElementwiseKernel<float, SubFunctor>));
REGISTER_KERNEL(elementwise_sub, kCUDA, double,
                (cuda::ElementwiseKernel<double, SubFunctor>));
REGISTER_KERNEL(elementwise_sub_grad, kCUDA, float,
                ElementwiseSubGradKernel<float>);
REGISTER_KERNEL(elementwise_sub_grad, kCUDA, double,
                ElementwiseSubGradKernel<double>);
REGISTER_KERNEL(elementwise_sub, kCUDA, bfloat16,
                (cuda::ElementwiseKernel<bfloat16, SubFunctor>));
REGISTER_KERNEL(elementwise_sub, kCUDA, float16,
                (cuda::ElementwiseKernel<float16, SubFunctor>));
REGISTER_KERNEL(elementwise_sub_grad, kCUDA, bfloat16,
                ElementwiseSubGradKernel<bfloat16>);
REGISTER_KERNEL(elementwise_sub_grad, kCUDA, float16,
                ElementwiseSubGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
