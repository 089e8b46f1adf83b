// CUDA kernels for reshape and reshape_grad (schemas and shape inference in
// reshape_op.cc). As on the CPU they copy into the output's own buffer
// rather than share the input's (reshape_op.cc says why).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/half_math.h"
#include "ops/reshape_op.h"

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
  const ReshapeCopy c = GetReshapeCopy(ctx);
  CopyInto<T>(ctx, *c.src, c.dst);
}

template <typename T>
void ReshapeGradKernel(const ExecutionContext& ctx) {
  const ReshapeCopy c = GetReshapeGradCopy(ctx);
  if (c.dst != nullptr) CopyInto<T>(ctx, *c.src, c.dst);
}

}  // namespace

REGISTER_FLOAT_KERNELS(reshape, kCUDA, ReshapeKernel);
REGISTER_HALF_KERNELS(reshape, kCUDA, ReshapeKernel);
REGISTER_KERNEL(reshape, kCUDA, int32_t, ReshapeKernel<int32_t>);
REGISTER_KERNEL(reshape, kCUDA, int64_t, ReshapeKernel<int64_t>);
REGISTER_FLOAT_KERNELS(reshape_grad, kCUDA, ReshapeGradKernel);
REGISTER_HALF_KERNELS(reshape_grad, kCUDA, ReshapeGradKernel);

}  // namespace ops
}  // namespace fluid
