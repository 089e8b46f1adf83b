// CUDA kernel for floor (schema in floor_op.cc).
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct FloorAt {
  const T* x;
  T* out;
  __device__ void operator()(int64_t i) const { out[i] = floor(x[i]); }
};

template <typename T>
void FloorKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  FloorAt<T> f;
  f.x = x.data<T>();
  f.out = cuda::OutputLike<T>(ctx, "Out", x);
  cuda::ForEach(cuda::Dev(ctx), x.numel(), f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(floor, kCUDA, FloorKernel);

}  // namespace ops
}  // namespace fluid
