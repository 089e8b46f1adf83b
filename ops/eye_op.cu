// CUDA kernel for eye (schema and the CPU kernel in eye_op.cc).
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct EyeAt {
  int64_t rows, cols;
  T* out;
  __device__ void operator()(int64_t i) const {
    out[i] = (i / cols) % rows == i % cols ? T(1) : T(0);
  }
};

template <typename T>
void EyeKernel(const ExecutionContext& ctx) {
  // Shaped by the shape inference run before the kernel.
  Tensor* out = ctx.Output("Out");
  const Shape& s = out->shape();
  T* p = out->mutable_data<T>(ctx.place());
  cuda::ForEach(cuda::Dev(ctx), out->numel(),
                EyeAt<T>{s[s.rank() - 2], s[s.rank() - 1], p});
}

}  // namespace

REGISTER_FLOAT_KERNELS(eye, kCUDA, EyeKernel);
REGISTER_KERNEL(eye, kCUDA, int32_t, EyeKernel<int32_t>);
REGISTER_KERNEL(eye, kCUDA, int64_t, EyeKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
