// CUDA kernel for assign_value (schema and shape inference in
// assign_value_op.cc): the op's values copied to the device on the
// context's stream, from the attr (which lives as long as the op).
#include "ops/assign_value_op.h"
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void AssignValueKernel(const ExecutionContext& ctx) {
  const std::vector<T>& values = AssignValues<T>(ctx);
  T* out = cuda::OutputData<T>(ctx, "Out");
  if (values.empty()) return;
  FLUID_CUDA_CHECK(
      cudaMemcpyAsync(out, values.data(), sizeof(T) * values.size(),
                      cudaMemcpyHostToDevice, cuda::Dev(ctx).stream()));
}

}  // namespace

REGISTER_KERNEL(assign_value, kCUDA, float, AssignValueKernel<float>);
REGISTER_KERNEL(assign_value, kCUDA, int32_t, AssignValueKernel<int32_t>);
REGISTER_KERNEL(assign_value, kCUDA, int64_t, AssignValueKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
