// CUDA kernels for elementwise_add and elementwise_add_grad (schemas in
// elementwise_add_op.cc; broadcasting in elementwise_op_function.cuh).
#include "ops/elementwise_op_function.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void ElementwiseAddKernel(const ExecutionContext& ctx) {
  cuda::ElementwiseForward<T>(ctx, cuda::AddOp());
}

template <typename T>
void ElementwiseAddGradKernel(const ExecutionContext& ctx) {
  const auto& [x, y, dout, d] = ReadElementwiseGradArgs(ctx);
  const auto& dev = cuda::Dev(ctx);
  // dX = dOut. Copied rather than shared: X@GRAD may be a view into a
  // gradient bucket that must receive the values in place.
  if (Tensor* dx = ctx.Output(GradSlot("X"))) {
    cuda::CopyAsync(dev, dx->mutable_data<T>(ctx.place()), dout.data<T>(),
                    sizeof(T) * dout.numel());
  }
  if (Tensor* dy = ctx.Output(GradSlot("Y"))) {
    cuda::ReduceToY<T, false>(dev, d, dout.data<T>(), nullptr,
                              dy->mutable_data<T>(ctx.place()));
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(elementwise_add, kCUDA, ElementwiseAddKernel);
REGISTER_FLOAT_KERNELS(elementwise_add_grad, kCUDA, ElementwiseAddGradKernel);
REGISTER_HALF_KERNELS(elementwise_add, kCUDA, ElementwiseAddKernel);
REGISTER_HALF_KERNELS(elementwise_add_grad, kCUDA, ElementwiseAddGradKernel);

}  // namespace ops
}  // namespace fluid
