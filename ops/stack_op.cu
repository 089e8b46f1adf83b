// CUDA kernels for stack and unstack (schemas, shape inference and grad
// makers in stack_op.cc): the piece copies of concat and split.
#include "ops/concat_split.cuh"
#include "ops/half_math.h"
#include "ops/stack_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void StackKernel(const ExecutionContext& ctx) {
  const size_t n = ctx.InputSize("X");
  const Shape piece = ctx.Input("X", 0).shape();
  const int axis =
      StackAxis(ctx.Attr<int32_t>("axis"), piece, ctx.InputName("X", 0));
  T* y = cuda::OutputData<T>(ctx, "Y");
  for (size_t i = 0; i < n; ++i) {
    const Tensor& x = ctx.Input("X", i);
    FLUID_ENFORCE(x.shape() == piece, "stack: X '", ctx.InputName("X", i), "' ",
                  x.shape(), " differs in shape from X '",
                  ctx.InputName("X", 0), "' ", piece);
    cuda::CopyPieceColumns(ctx, StackPiece(piece, axis, n, i), x.data<T>(), y,
                           true);
  }
}

template <typename T>
void UnstackKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  int axis = 0;
  const Shape piece =
      UnstackPiece(ctx.InputName("X"), x.shape(), ctx.Attr<int32_t>("axis"),
                   ctx.Attr<int32_t>("num"), ctx.OutputSize("Y"), &axis);
  const size_t n = ctx.OutputSize("Y");
  for (size_t i = 0; i < n; ++i) {
    T* y = cuda::OutputData<T>(ctx, "Y", i);
    if (y == nullptr) continue;
    cuda::CopyPieceColumns(ctx, StackPiece(piece, axis, n, i), x.data<T>(), y,
                           false);
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(stack, kCUDA, StackKernel);
REGISTER_HALF_KERNELS(stack, kCUDA, StackKernel);
REGISTER_KERNEL(stack, kCUDA, int32_t, StackKernel<int32_t>);
REGISTER_KERNEL(stack, kCUDA, int64_t, StackKernel<int64_t>);
REGISTER_FLOAT_KERNELS(unstack, kCUDA, UnstackKernel);
REGISTER_HALF_KERNELS(unstack, kCUDA, UnstackKernel);
REGISTER_KERNEL(unstack, kCUDA, int32_t, UnstackKernel<int32_t>);
REGISTER_KERNEL(unstack, kCUDA, int64_t, UnstackKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
