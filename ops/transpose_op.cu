// CUDA kernel for transpose (schema, shape inference and grad maker in
// transpose_op.cc), for float and integer tensors; its gradient is a
// transpose too.
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/half_math.h"
#include "ops/transpose_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct TransposeFunctor {
  const T* x;
  T* out;
  TransposeIndex index;
  __device__ void operator()(int64_t i) const { out[i] = x[index.Source(i)]; }
};

template <typename T>
void TransposeKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput("Out")) return;
  const Tensor& x = ctx.Input("X");
  TransposeFunctor<T> f;
  f.x = x.data<T>();
  f.out = cuda::OutputData<T>(ctx, "Out");
  f.index = MakeTransposeIndex(ctx, x);
  cuda::ForEach(cuda::Dev(ctx), x.numel(), f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(transpose, kCUDA, TransposeKernel);
REGISTER_HALF_KERNELS(transpose, kCUDA, TransposeKernel);
REGISTER_KERNEL(transpose, kCUDA, int32_t, TransposeKernel<int32_t>);
REGISTER_KERNEL(transpose, kCUDA, int64_t, TransposeKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
