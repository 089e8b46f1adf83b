// CUDA kernels for elementwise_mul and elementwise_mul_grad (schemas in
// elementwise_mul_op.cc; broadcasting in elementwise_op_function.cuh). A
// sparse X's values are multiplied by the one element of Y, read on the
// device.
#include "ops/elementwise_op_function.cuh"
#include "ops/sparse_values.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void SparseTimesScalar(const ExecutionContext& ctx) {
  const T* y = SparseScaleFactor(ctx, "Y").data<T>();
  const SparseInOut s = SparseValues(ctx, "X", "Out", false);
  cuda::BroadcastScalar<T, cuda::MulOp> u;
  u.x = s.x.data<T>();
  u.y = y;
  u.out = s.out->mutable_data<T>(s.x.shape(), ctx.place());
  cuda::ForEach(cuda::Dev(ctx), s.x.numel(), u);
}

template <typename T>
void ElementwiseMulKernel(const ExecutionContext& ctx) {
  if (IsSparseInput(ctx, "X")) return SparseTimesScalar<T>(ctx);
  cuda::ElementwiseForward<T>(ctx, cuda::MulOp());
}

template <typename T>
void ElementwiseMulGradKernel(const ExecutionContext& ctx) {
  const auto& [x, y, dout, d] = ReadElementwiseGradArgs(ctx);
  const auto& dev = cuda::Dev(ctx);
  // dY first: when X@GRAD is the same var as X, X is still intact here (the
  // stream runs the two in order).
  if (Tensor* dy = ctx.Output(GradSlot("Y"))) {
    cuda::ReduceToY<T, true>(dev, d, dout.data<T>(), x.data<T>(),
                             dy->mutable_data<T>(ctx.place()));
  }
  // dX = dOut * Y, broadcast exactly as in the forward.
  if (Tensor* dx = ctx.Output(GradSlot("X"))) {
    cuda::ElementwiseCompute<T>(dev, d, dout.data<T>(), y.data<T>(),
                                dx->mutable_data<T>(ctx.place()),
                                cuda::MulOp());
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(elementwise_mul, kCUDA, ElementwiseMulKernel);
REGISTER_FLOAT_KERNELS(elementwise_mul_grad, kCUDA, ElementwiseMulGradKernel);
REGISTER_HALF_KERNELS(elementwise_mul, kCUDA, ElementwiseMulKernel);
REGISTER_HALF_KERNELS(elementwise_mul_grad, kCUDA, ElementwiseMulGradKernel);

}  // namespace ops
}  // namespace fluid
