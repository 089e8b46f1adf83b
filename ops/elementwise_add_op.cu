// CUDA kernels for elementwise_add and elementwise_add_grad (schemas in
// elementwise_add_op.cc; broadcasting in elementwise_op_function.cuh).
#include "ops/elementwise_op_function.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void ElementwiseAddKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  BroadcastDims d = GetBroadcastDims(ctx, x, y);
  T* out = cuda::OutputData<T>(ctx, "Out");
  cuda::ElementwiseCompute<T>(cuda::Dev(ctx), d, x.data<T>(), y.data<T>(), out,
                              cuda::AddOp());
}

template <typename T>
void ElementwiseAddGradKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  BroadcastDims d = GetBroadcastDims(ctx, x, y);
  FLUID_ENFORCE(dout.shape() == x.shape(), ctx.type(), ": Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " differs from X '", ctx.InputName("X"), "' ", x.shape());
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

}  // namespace ops
}  // namespace fluid
