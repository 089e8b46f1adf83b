// CUDA kernel for clip_by_norm (schema in clip_by_norm_op.cc): the squared
// norm by a deterministic reduction in double, then one scaling pass that
// reads it on the device.
#include "ops/clip_functors.h"
#include "ops/cuda/squared_norm.cuh"

namespace fluid {
namespace ops {

float ClipByNormMaxNorm(const ExecutionContext& ctx);

namespace {

template <typename T>
struct ScaleByNorm {
  const double* sq_norm;
  double max_norm;
  const T* x;
  T* out;
  __device__ void operator()(int64_t i) const {
    out[i] = x[i] * static_cast<T>(ClipByNormFactor(*sq_norm, max_norm));
  }
};

template <typename T>
void ClipByNormKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const auto& dev = cuda::Dev(ctx);
  ScaleByNorm<T> u;
  u.max_norm = ClipByNormMaxNorm(ctx);
  u.x = x.data<T>();
  const T* xs[1] = {u.x};
  auto* scratch = static_cast<double*>(
      dev.Workspace(sizeof(double) * cuda::SquaredNormScratch(x.numel(), 1)));
  u.sq_norm = cuda::SquaredNorms<T>(dev, xs, 1, x.numel(), scratch);
  u.out = cuda::OutputLike<T>(ctx, "Out", x);
  cuda::ForEach(dev, x.numel(), u);
}

}  // namespace

REGISTER_FLOAT_KERNELS(clip_by_norm, kCUDA, ClipByNormKernel);

}  // namespace ops
}  // namespace fluid
