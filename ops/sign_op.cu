// CUDA kernel for sign (schema in sign_op.cc).
#include "ops/clip_functors.h"
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct SignAt {
  const T* x;
  T* out;
  __device__ void operator()(int64_t i) const { out[i] = SignOf(x[i]); }
};

template <typename T>
void SignKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  SignAt<T> f;
  f.x = x.data<T>();
  f.out = cuda::OutputLike<T>(ctx, "Out", x);
  cuda::ForEach(cuda::Dev(ctx), x.numel(), f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(sign, kCUDA, SignKernel);

}  // namespace ops
}  // namespace fluid
