// CUDA kernel for shape (schema and shape inference in shape_op.cc): the
// shape, known on the host, copied into the device output.
#include <cstdint>
#include <vector>

#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

void ShapeKernel(const ExecutionContext& ctx) {
  const Shape& s = ctx.Input("Input").shape();
  std::vector<int32_t> dims;
  for (int d = 0; d < s.rank(); ++d) {
    FLUID_ENFORCE(s[d] <= INT32_MAX, "shape: dim ", d, " of Input '",
                  ctx.InputName("Input"), "' ", s, " does not fit int32");
    dims.push_back(static_cast<int32_t>(s[d]));
  }
  int32_t* out = cuda::OutputData<int32_t>(ctx, "Out");
  // Synchronous: `dims` is gone when this returns.
  if (!dims.empty())
    FLUID_CUDA_CHECK(cudaMemcpy(out, dims.data(), sizeof(int32_t) * dims.size(),
                                cudaMemcpyHostToDevice));
}

}  // namespace

REGISTER_ANY_DTYPE_KERNEL(shape, kCUDA, ShapeKernel);

}  // namespace ops
}  // namespace fluid
