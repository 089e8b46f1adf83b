// CUDA kernels for uniform_random, gaussian_random and
// truncated_gaussian_random (schemas in
// random_op.cc). The values are drawn on the host by the CPU kernels' own
// generators (random_fill.h) and copied to the device, so a parameter
// initialised on the GPU has the same bits as one initialised on the CPU.
// They run once, in the startup program, so the synchronous copy costs
// nothing that matters.
#include <vector>

#include "ops/cuda/cuda_helpers.cuh"
#include "ops/random_fill.h"

namespace fluid {
namespace ops {
namespace {

// out (on the device) = host[0, n).
template <typename T>
void CopyToDevice(const ExecutionContext& ctx, const std::vector<T>& host,
                  T* out) {
  if (host.empty()) return;
  // The output buffer may still be in use by kernels queued earlier.
  FLUID_CUDA_CHECK(cudaStreamSynchronize(cuda::Dev(ctx).stream()));
  FLUID_CUDA_CHECK(cudaMemcpy(out, host.data(), sizeof(T) * host.size(),
                              cudaMemcpyHostToDevice));
}

template <typename T>
void UniformRandomKernel(const ExecutionContext& ctx) {
  const UniformParams p = GetUniformParams(ctx);
  Tensor* out = ctx.Output("Out");
  out->Resize(Shape(ctx.Attr<std::vector<int64_t>>("shape")));
  T* o = out->mutable_data<T>(ctx.place());
  std::vector<T> host(static_cast<size_t>(out->numel()));
  FillUniform(p, host.data(), out->numel());
  CopyToDevice(ctx, host, o);
}

template <typename T>
void GaussianRandomKernel(const ExecutionContext& ctx) {
  const GaussianParams p = GetGaussianParams(ctx);
  Tensor* out = ctx.Output("Out");
  out->Resize(Shape(ctx.Attr<std::vector<int64_t>>("shape")));
  T* o = out->mutable_data<T>(ctx.place());
  std::vector<T> host(static_cast<size_t>(out->numel()));
  FillGaussian(p, host.data(), out->numel());
  CopyToDevice(ctx, host, o);
}

template <typename T>
void TruncatedGaussianRandomKernel(const ExecutionContext& ctx) {
  const GaussianParams p = GetTruncatedGaussianParams(ctx);
  Tensor* out = ctx.Output("Out");
  out->Resize(Shape(ctx.Attr<std::vector<int64_t>>("shape")));
  T* o = out->mutable_data<T>(ctx.place());
  std::vector<T> host(static_cast<size_t>(out->numel()));
  FillTruncatedGaussian(p, host.data(), out->numel());
  CopyToDevice(ctx, host, o);
}

}  // namespace

REGISTER_FLOAT_KERNELS(uniform_random, kCUDA, UniformRandomKernel);
REGISTER_FLOAT_KERNELS(gaussian_random, kCUDA, GaussianRandomKernel);
REGISTER_FLOAT_KERNELS(truncated_gaussian_random, kCUDA,
                       TruncatedGaussianRandomKernel);

}  // namespace ops
}  // namespace fluid
