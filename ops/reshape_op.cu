// CUDA kernels for reshape and reshape_grad (schemas and shape inference in
// reshape_op.cc). As on the CPU they copy into the output's own buffer
// rather than share the input's (reshape_op.cc says why).
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

// dst (already shaped) = src's elements, in dst's own buffer; nothing to do
// in place.
template <typename T>
void CopyInto(const ExecutionContext& ctx, const Tensor& src, Tensor* dst) {
  cuda::CopyAsync(cuda::Dev(ctx), dst->mutable_data<T>(ctx.place()),
                  src.data<T>(), sizeof(T) * src.numel());
}

template <typename T>
void ReshapeKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  // Shape inference ran just before and sized Out.
  FLUID_ENFORCE(out->numel() == x.numel(), "reshape: Out '",
                ctx.OutputName("Out"), "' ", out->shape(), " and X '",
                ctx.InputName("X"), "' ", x.shape(), " differ in size");
  CopyInto<T>(ctx, x, out);
}

template <typename T>
void ReshapeGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.numel() == dx->numel(), "reshape_grad: Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " does not fit X '", ctx.InputName("X"), "' ", dx->shape());
  CopyInto<T>(ctx, dout, dx);
}

}  // namespace

REGISTER_FLOAT_KERNELS(reshape, kCUDA, ReshapeKernel);
REGISTER_FLOAT_KERNELS(reshape_grad, kCUDA, ReshapeGradKernel);

}  // namespace ops
}  // namespace fluid
