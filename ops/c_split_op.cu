// CUDA kernel for c_split (schema, shape inference and grad maker in
// c_split_op.cc): the rank's block copied out on the device.
#include "ops/c_split_concat.cuh"

namespace fluid {
namespace ops {
namespace {

void SplitCudaKernel(const ExecutionContext& ctx) {
  RunSplit(ctx, cuda::CudaPieceCopy);
}

}  // namespace

REGISTER_ANY_DTYPE_KERNEL(c_split, kCUDA, SplitCudaKernel);

}  // namespace ops
}  // namespace fluid
