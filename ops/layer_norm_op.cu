// CUDA kernels for layer_norm and layer_norm_grad (schemas and formulas in
// layer_norm_op.cc). One block per row for Y and dX, its sums block
// reductions in a fixed order; one thread per column for dScale and dBias,
// summing the rows in order. Deterministic run to run.
#include "ops/cuda/dense_helpers.cuh"
#include "ops/layer_norm_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
__global__ void LayerNormRows(int64_t rows, int64_t d, const T* x,
                              const T* scale, const T* bias, T eps, T* y,
                              T* mean, T* var) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    T sum = 0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) sum += xr[c];
    const T mu = cuda::BlockReduce(sum, cuda::SumOp(), T(0)) / T(d);
    T sq = 0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x)
      sq += (xr[c] - mu) * (xr[c] - mu);
    const T v = cuda::BlockReduce(sq, cuda::SumOp(), T(0)) / T(d);
    const T rstd = T(1) / sqrt(v + eps);
    T* yr = y + r * d;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
      T out = (xr[c] - mu) * rstd;
      if (scale) out *= scale[c];
      if (bias) out += bias[c];
      yr[c] = out;
    }
    if (threadIdx.x == 0) {
      mean[r] = mu;
      var[r] = v;
    }
  }
}

template <typename T>
__global__ void LayerNormInputGradRows(int64_t rows, int64_t d, const T* x,
                                       const T* dy, const T* scale,
                                       const T* mean, const T* var, T eps,
                                       T* dx) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    const T* gr = dy + r * d;
    const T rstd = T(1) / sqrt(var[r] + eps);
    T g_sum = 0, gx_sum = 0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
      const T g = scale ? gr[c] * scale[c] : gr[c];
      g_sum += g;
      gx_sum += g * ((xr[c] - mean[r]) * rstd);
    }
    const T g_mean = cuda::BlockReduce(g_sum, cuda::SumOp(), T(0)) / T(d);
    const T gx_mean = cuda::BlockReduce(gx_sum, cuda::SumOp(), T(0)) / T(d);
    T* dr = dx + r * d;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
      const T g = scale ? gr[c] * scale[c] : gr[c];
      const T xhat = (xr[c] - mean[r]) * rstd;
      dr[c] = rstd * (g - g_mean - xhat * gx_mean);
    }
  }
}

// Column c of dScale and dBias (either may be null), the rows in order.
template <typename T>
struct ParamGradColumn {
  int64_t rows, d;
  const T* x;
  const T* dy;
  const T* mean;
  const T* var;
  T eps;
  T* dscale;
  T* dbias;
  __device__ void operator()(int64_t c) const {
    T s = 0, b = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T g = dy[r * d + c];
      b += g;
      s += g * ((x[r * d + c] - mean[r]) * (T(1) / sqrt(var[r] + eps)));
    }
    if (dscale) dscale[c] = s;
    if (dbias) dbias[c] = b;
  }
};

template <typename T>
void LayerNormKernel(const ExecutionContext& ctx) {
  const LayerNormArgs a = ReadLayerNormArgs(ctx);
  T* y = cuda::OutputData<T>(ctx, "Y");
  T* mean = cuda::OutputData<T>(ctx, "Mean");
  T* var = cuda::OutputData<T>(ctx, "Variance");
  const int64_t rows = a.dims.rows, d = a.dims.cols;
  if (rows == 0 || d == 0) return;
  LayerNormRows<T><<<cuda::RowBlocks(rows), cuda::RowThreads(d), 0,
                     cuda::Dev(ctx).stream()>>>(
      rows, d, a.x.data<T>(), a.scale ? a.scale->data<T>() : nullptr,
      a.bias ? a.bias->data<T>() : nullptr, static_cast<T>(a.epsilon), y, mean,
      var);
  cuda::CheckLaunch();
}

template <typename T>
void LayerNormGradKernel(const ExecutionContext& ctx) {
  const LayerNormGradArgs a = ReadLayerNormGradArgs(ctx);
  const int64_t rows = a.dims.rows, d = a.dims.cols;
  const T eps = static_cast<T>(a.epsilon);
  const auto& dev = cuda::Dev(ctx);
  if (T* dx = cuda::OutputData<T>(ctx, GradSlot("X"))) {
    if (rows > 0 && d > 0) {
      LayerNormInputGradRows<T>
          <<<cuda::RowBlocks(rows), cuda::RowThreads(d), 0, dev.stream()>>>(
              rows, d, a.x.data<T>(), a.dy.data<T>(),
              a.scale ? a.scale->data<T>() : nullptr, a.mean.data<T>(),
              a.variance.data<T>(), eps, dx);
      cuda::CheckLaunch();
    }
  }
  ParamGradColumn<T> f;
  f.rows = rows;
  f.d = d;
  f.x = a.x.data<T>();
  f.dy = a.dy.data<T>();
  f.mean = a.mean.data<T>();
  f.var = a.variance.data<T>();
  f.eps = eps;
  f.dscale = cuda::OutputData<T>(ctx, GradSlot("Scale"));
  f.dbias = cuda::OutputData<T>(ctx, GradSlot("Bias"));
  if (f.dscale || f.dbias) cuda::ForEach(dev, d, f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(layer_norm, kCUDA, LayerNormKernel);
REGISTER_FLOAT_KERNELS(layer_norm_grad, kCUDA, LayerNormGradKernel);

}  // namespace ops
}  // namespace fluid
