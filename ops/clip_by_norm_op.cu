// CUDA kernel for clip_by_norm (schema in clip_by_norm_op.cc): the squared
// norm by a deterministic reduction in double, then one scaling pass that
// reads it on the device. A sparse X's values are scaled by their norm
// (ops/sparse_values.h).
#include "ops/clip_functors.h"
#include "ops/cuda/squared_norm.cuh"
#include "ops/sparse_values.h"

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
void ClipByNormValues(const ExecutionContext& ctx, const Tensor& x,
                      Tensor* out) {
  const auto& dev = cuda::Dev(ctx);
  ScaleByNorm<T> u;
  u.max_norm = ClipByNormMaxNorm(ctx);
  u.x = x.data<T>();
  const T* xs[1] = {u.x};
  auto* scratch = static_cast<double*>(
      dev.Workspace(sizeof(double) * cuda::SquaredNormScratch(x.numel(), 1)));
  u.sq_norm = cuda::SquaredNorms<T>(dev, xs, 1, x.numel(), scratch);
  u.out = out->mutable_data<T>(x.shape(), ctx.place());
  cuda::ForEach(dev, x.numel(), u);
}

template <typename T>
void ClipByNormKernel(const ExecutionContext& ctx) {
  if (IsSparseInput(ctx, "X")) {
    const SparseInOut s = SparseValues(ctx, "X", "Out", true);
    return ClipByNormValues<T>(ctx, s.x, s.out);
  }
  ClipByNormValues<T>(ctx, ctx.Input("X"), ctx.Output("Out"));
}

}  // namespace

REGISTER_FLOAT_KERNELS(clip_by_norm, kCUDA, ClipByNormKernel);

}  // namespace ops
}  // namespace fluid
