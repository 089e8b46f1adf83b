// CUDA kernels for squeeze2, unsqueeze2 and their gradients (schemas and
// shape inference in squeeze_op.cc): a device copy, any dtype.
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

// dst (already shaped) = src's elements.
void CopyElements(const ExecutionContext& ctx, const Tensor& src, Tensor* dst) {
  FLUID_ENFORCE(src.numel() == dst->numel(), ctx.type(), ": ", src.shape(),
                " does not fit ", dst->shape());
  void* d = dst->raw_mutable_data(ctx.place());
  if (d != src.raw_data())
    cuda::CopyAsync(cuda::Dev(ctx), d, src.raw_data(), src.bytes());
}

void SqueezeKernel(const ExecutionContext& ctx) {
  CopyElements(ctx, ctx.Input("X"), ctx.Output("Out"));
  if (Tensor* xshape = ctx.Output("XShape"))
    xshape->raw_mutable_data(ctx.place());
}

void SqueezeGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx != nullptr) CopyElements(ctx, ctx.Input(GradSlot("Out")), dx);
}

}  // namespace

REGISTER_ANY_DTYPE_KERNEL(squeeze2, kCUDA, SqueezeKernel);
REGISTER_ANY_DTYPE_KERNEL(squeeze2_grad, kCUDA, SqueezeGradKernel);
REGISTER_ANY_DTYPE_KERNEL(unsqueeze2, kCUDA, SqueezeKernel);
REGISTER_ANY_DTYPE_KERNEL(unsqueeze2_grad, kCUDA, SqueezeGradKernel);

}  // namespace ops
}  // namespace fluid
