// CUDA kernels for layer_norm and layer_norm_grad (schemas and formulas in
// layer_norm_op.cc). One block per row for Y and dX, its sums block
// reductions in a fixed order; one thread per column for dScale and dBias,
// summing the rows in order. Deterministic run to run.
//
// X, Y and their gradients are T; Scale, Bias, Mean, Variance and their
// gradients are P = ComputeType<T> (float32 for bfloat16 and float16,
// whose values are computed and summed in float and rounded once).
#include "ops/cuda/dense_helpers.cuh"
#include "ops/half_math.h"
#include "ops/layer_norm_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T, typename P = ComputeType<T>>
__global__ void LayerNormRows(int64_t rows, int64_t d, const T* x,
                              const P* scale, const P* bias, P eps, T* y,
                              P* mean, P* var) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    P sum = 0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x)
      sum += ToCompute(xr[c]);
    const P mu = cuda::BlockReduce(sum, cuda::SumOp(), P(0)) / P(d);
    P sq = 0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x)
      sq += (ToCompute(xr[c]) - mu) * (ToCompute(xr[c]) - mu);
    const P v = cuda::BlockReduce(sq, cuda::SumOp(), P(0)) / P(d);
    const P rstd = P(1) / sqrt(v + eps);
    T* yr = y + r * d;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
      P out = (ToCompute(xr[c]) - mu) * rstd;
      if (scale) out *= scale[c];
      if (bias) out += bias[c];
      yr[c] = FromCompute<T>(out);
    }
    if (threadIdx.x == 0) {
      mean[r] = mu;
      var[r] = v;
    }
  }
}

template <typename T, typename P = ComputeType<T>>
__global__ void LayerNormInputGradRows(int64_t rows, int64_t d, const T* x,
                                       const T* dy, const P* scale,
                                       const P* mean, const P* var, P eps,
                                       T* dx) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    const T* gr = dy + r * d;
    const P rstd = P(1) / sqrt(var[r] + eps);
    P g_sum = 0, gx_sum = 0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
      const P g = scale ? ToCompute(gr[c]) * scale[c] : ToCompute(gr[c]);
      g_sum += g;
      gx_sum += g * ((ToCompute(xr[c]) - mean[r]) * rstd);
    }
    const P g_mean = cuda::BlockReduce(g_sum, cuda::SumOp(), P(0)) / P(d);
    const P gx_mean = cuda::BlockReduce(gx_sum, cuda::SumOp(), P(0)) / P(d);
    T* dr = dx + r * d;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
      const P g = scale ? ToCompute(gr[c]) * scale[c] : ToCompute(gr[c]);
      const P xhat = (ToCompute(xr[c]) - mean[r]) * rstd;
      dr[c] = FromCompute<T>(rstd * (g - g_mean - xhat * gx_mean));
    }
  }
}

// Column c of dScale and dBias (either may be null), the rows in order.
template <typename T, typename P = ComputeType<T>>
struct ParamGradColumn {
  int64_t rows, d;
  const T* x;
  const T* dy;
  const P* mean;
  const P* var;
  P eps;
  P* dscale;
  P* dbias;
  __device__ void operator()(int64_t c) const {
    P s = 0, b = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const P g = ToCompute(dy[r * d + c]);
      b += g;
      s += g *
           ((ToCompute(x[r * d + c]) - mean[r]) * (P(1) / sqrt(var[r] + eps)));
    }
    if (dscale) dscale[c] = s;
    if (dbias) dbias[c] = b;
  }
};

template <typename T>
void LayerNormKernel(const ExecutionContext& ctx) {
  using P = ComputeType<T>;
  const LayerNormArgs a = ReadLayerNormArgs(ctx);
  T* y = cuda::OutputData<T>(ctx, "Y");
  P* mean = cuda::OutputData<P>(ctx, "Mean");
  P* var = cuda::OutputData<P>(ctx, "Variance");
  const int64_t rows = a.dims.rows, d = a.dims.cols;
  if (rows == 0 || d == 0) return;
  LayerNormRows<T><<<cuda::RowBlocks(rows), cuda::RowThreads(d), 0,
                     cuda::Dev(ctx).stream()>>>(
      rows, d, a.x.data<T>(), a.scale ? a.scale->data<P>() : nullptr,
      a.bias ? a.bias->data<P>() : nullptr, static_cast<P>(a.epsilon), y, mean,
      var);
  cuda::CheckLaunch();
}

template <typename T>
void LayerNormGradKernel(const ExecutionContext& ctx) {
  using P = ComputeType<T>;
  const LayerNormGradArgs a = ReadLayerNormGradArgs(ctx);
  const int64_t rows = a.dims.rows, d = a.dims.cols;
  const P eps = static_cast<P>(a.epsilon);
  const auto& dev = cuda::Dev(ctx);
  if (T* dx = cuda::OutputData<T>(ctx, GradSlot("X"))) {
    if (rows > 0 && d > 0) {
      LayerNormInputGradRows<T>
          <<<cuda::RowBlocks(rows), cuda::RowThreads(d), 0, dev.stream()>>>(
              rows, d, a.x.data<T>(), a.dy.data<T>(),
              a.scale ? a.scale->data<P>() : nullptr, a.mean.data<P>(),
              a.variance.data<P>(), eps, dx);
      cuda::CheckLaunch();
    }
  }
  ParamGradColumn<T> f;
  f.rows = rows;
  f.d = d;
  f.x = a.x.data<T>();
  f.dy = a.dy.data<T>();
  f.mean = a.mean.data<P>();
  f.var = a.variance.data<P>();
  f.eps = eps;
  f.dscale = cuda::OutputData<P>(ctx, GradSlot("Scale"));
  f.dbias = cuda::OutputData<P>(ctx, GradSlot("Bias"));
  if (f.dscale || f.dbias) cuda::ForEach(dev, d, f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(layer_norm, kCUDA, LayerNormKernel);
REGISTER_FLOAT_KERNELS(layer_norm_grad, kCUDA, LayerNormGradKernel);
REGISTER_HALF_KERNELS(layer_norm, kCUDA, LayerNormKernel);
REGISTER_HALF_KERNELS(layer_norm_grad, kCUDA, LayerNormGradKernel);

}  // namespace ops
}  // namespace fluid
