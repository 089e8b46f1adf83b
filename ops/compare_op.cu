// CUDA kernels of the compare ops (schemas in compare_op.cc, comparisons in
// compare_op.h): one thread per element of X.
#include "ops/compare_op.h"
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T, typename F>
struct CompareEach {
  const T* x;
  const T* y;
  bool* out;
  int64_t n;
  int64_t post;
  __device__ void operator()(int64_t i) const {
    out[i] = F()(x[i], y[(i / post) % n]);
  }
};

template <typename T, typename F>
void CompareKernel(const ExecutionContext& ctx) {
  const BroadcastDims d = CompareDims(ctx);
  const Tensor& x = ctx.Input("X");
  CompareEach<T, F> f;
  f.x = x.data<T>();
  f.y = ctx.Input("Y").data<T>();
  f.out = cuda::OutputLike<bool>(ctx, "Out", x);
  f.n = d.n;
  f.post = d.post;
  cuda::ForEach(cuda::Dev(ctx), x.numel(), f);
}

}  // namespace

#define FLUID_COMPARE_CUDA_KERNELS(type, functor)                           \
  REGISTER_KERNEL(type, kCUDA, float, (CompareKernel<float, functor>));     \
  REGISTER_KERNEL(type, kCUDA, double, (CompareKernel<double, functor>));   \
  REGISTER_KERNEL(type, kCUDA, int32_t, (CompareKernel<int32_t, functor>)); \
  REGISTER_KERNEL(type, kCUDA, int64_t, (CompareKernel<int64_t, functor>))

FLUID_COMPARE_CUDA_KERNELS(less_than, LessThanFunctor);
FLUID_COMPARE_CUDA_KERNELS(less_equal, LessEqualFunctor);
FLUID_COMPARE_CUDA_KERNELS(greater_than, GreaterThanFunctor);
FLUID_COMPARE_CUDA_KERNELS(greater_equal, GreaterEqualFunctor);
FLUID_COMPARE_CUDA_KERNELS(equal, EqualFunctor);
FLUID_COMPARE_CUDA_KERNELS(not_equal, NotEqualFunctor);

#undef FLUID_COMPARE_CUDA_KERNELS

}  // namespace ops
}  // namespace fluid
