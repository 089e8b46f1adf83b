// CUDA kernel for assign (schema, shape inference and grad maker in
// assign_op.cc): a device copy, any dtype.
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

void AssignKernel(const ExecutionContext& ctx) {
  Tensor* out = ctx.Output("Out");
  if (out == nullptr) return;
  const Tensor& x = ctx.Input("X");
  void* dst = out->raw_mutable_data(ctx.place());
  if (dst != x.raw_data())
    cuda::CopyAsync(cuda::Dev(ctx), dst, x.raw_data(), x.bytes());
}

}  // namespace

REGISTER_ANY_DTYPE_KERNEL(assign, kCUDA, AssignKernel);

}  // namespace ops
}  // namespace fluid
