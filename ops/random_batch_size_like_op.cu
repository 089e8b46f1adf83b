// CUDA kernels for uniform_random_batch_size_like and
// gaussian_random_batch_size_like (schemas and the CPU kernels in
// random_batch_size_like_op.cc): the values are drawn on the host by the
// CPU kernels' generators (random_fill.h) and copied to the device, so both
// places draw the same bits.
#include <vector>

#include "ops/cuda/cuda_helpers.cuh"
#include "ops/random_batch_size_like_op.h"
#include "ops/random_fill.h"

namespace fluid {
namespace ops {
namespace {

template <typename T, typename Params, typename Fill>
void DrawOnHost(const ExecutionContext& ctx, const Params& p, Fill fill) {
  Tensor* out = ctx.Output("Out");
  T* o = out->mutable_data<T>(ctx.place());
  std::vector<T> host(static_cast<size_t>(out->numel()));
  fill(p, host.data(), out->numel());
  if (host.empty()) return;
  // The output buffer may still be in use by kernels queued earlier.
  FLUID_CUDA_CHECK(cudaStreamSynchronize(cuda::Dev(ctx).stream()));
  FLUID_CUDA_CHECK(cudaMemcpy(o, host.data(), sizeof(T) * host.size(),
                              cudaMemcpyHostToDevice));
}

void UniformBatchSizeLikeKernel(const ExecutionContext& ctx) {
  const UniformParams p = GetUniformParams(ctx);
  auto fill = [](const UniformParams& q, auto* o, int64_t n) {
    FillUniform(q, o, n);
  };
  if (ShapeRandomBatchSizeLike(ctx) == DataType::kFloat32) {
    DrawOnHost<float>(ctx, p, fill);
  } else {
    DrawOnHost<double>(ctx, p, fill);
  }
}

void GaussianBatchSizeLikeKernel(const ExecutionContext& ctx) {
  const GaussianParams p = GetGaussianParams(ctx);
  auto fill = [](const GaussianParams& q, auto* o, int64_t n) {
    FillGaussian(q, o, n);
  };
  if (ShapeRandomBatchSizeLike(ctx) == DataType::kFloat32) {
    DrawOnHost<float>(ctx, p, fill);
  } else {
    DrawOnHost<double>(ctx, p, fill);
  }
}

}  // namespace

REGISTER_ANY_DTYPE_KERNEL(uniform_random_batch_size_like, kCUDA,
                          UniformBatchSizeLikeKernel);
REGISTER_ANY_DTYPE_KERNEL(gaussian_random_batch_size_like, kCUDA,
                          GaussianBatchSizeLikeKernel);

}  // namespace ops
}  // namespace fluid
