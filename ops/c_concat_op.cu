// CUDA kernel for c_concat (schema, shape inference and grad maker in
// c_concat_op.cc): the blocks gathered by the ring's communicator, then
// moved into their columns on the device.
#include "ops/c_split_concat.cuh"

namespace fluid {
namespace ops {
namespace {

void ConcatCudaKernel(const ExecutionContext& ctx) {
  RunConcat(ctx, cuda::CudaPieceCopy);
}

}  // namespace

REGISTER_ANY_DTYPE_KERNEL(c_concat, kCUDA, ConcatCudaKernel);

}  // namespace ops
}  // namespace fluid
