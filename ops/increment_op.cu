// CUDA kernel for increment (schema in increment_op.cc): one thread adds
// the step on the device.
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {

const Tensor& IncrementInput(const ExecutionContext& ctx);

namespace {

template <typename T>
struct AddStep {
  const T* x;
  T step;
  T* out;
  __device__ void operator()(int64_t) const { out[0] = x[0] + step; }
};

template <typename T>
void IncrementKernel(const ExecutionContext& ctx) {
  const Tensor& x = IncrementInput(ctx);
  AddStep<T> f;
  f.x = x.data<T>();
  f.step = static_cast<T>(ctx.Attr<float>("step"));
  f.out = cuda::OutputLike<T>(ctx, "Out", x);
  cuda::ForEach(cuda::Dev(ctx), 1, f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(increment, kCUDA, IncrementKernel);
REGISTER_KERNEL(increment, kCUDA, int32_t, IncrementKernel<int32_t>);
REGISTER_KERNEL(increment, kCUDA, int64_t, IncrementKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
