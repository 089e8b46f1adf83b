// CUDA kernels for softmax and softmax_grad (schemas in softmax_op.cc).
// Over the last axis, one block per row; the row max, sum and dot product
// are block reductions in a fixed order (deterministic run to run). Over
// another axis, one thread per softmax, walking its strided elements in
// order. The formulas are the CPU kernel's: Out = exp(X - max) * (1 / sum),
// and dX = (dOut - sum(dOut * Out)) * Out.
#include "ops/cuda/dense_helpers.cuh"
#include "ops/softmax_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
__global__ void SoftmaxRows(int64_t rows, int64_t d, const T* x, T* out) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x)
    cuda::BlockSoftmaxRow(x + r * d, d, out + r * d);
}

template <typename T>
__global__ void SoftmaxGradRows(int64_t rows, int64_t d, const T* y, const T* g,
                                T* dx) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* yr = y + r * d;
    const T* gr = g + r * d;
    T dot = 0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) dot += gr[c] * yr[c];
    dot = cuda::BlockReduce(dot, cuda::SumOp(), T(0));
    T* dr = dx + r * d;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x)
      dr[c] = (gr[c] - dot) * yr[c];
  }
}

// One softmax over a strided axis: elements base + j * inner, j < n.
template <typename T>
struct StridedSoftmax {
  int64_t n, inner;
  const T* x;
  T* out;
  __device__ void operator()(int64_t c) const {
    const int64_t base = (c / inner) * n * inner + c % inner;
    T mx = x[base];
    for (int64_t j = 1; j < n; ++j) mx = cuda::MaxOp()(mx, x[base + j * inner]);
    T sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      const T e = exp(x[base + j * inner] - mx);
      out[base + j * inner] = e;
      sum += e;
    }
    const T inv = T(1) / sum;
    for (int64_t j = 0; j < n; ++j) out[base + j * inner] *= inv;
  }
};

template <typename T>
struct StridedSoftmaxGrad {
  int64_t n, inner;
  const T* y;
  const T* g;
  T* dx;
  __device__ void operator()(int64_t c) const {
    const int64_t base = (c / inner) * n * inner + c % inner;
    T dot = 0;
    for (int64_t j = 0; j < n; ++j)
      dot += g[base + j * inner] * y[base + j * inner];
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = base + j * inner;
      dx[i] = (g[i] - dot) * y[i];
    }
  }
};

template <typename T>
void SoftmaxKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  T* out = cuda::OutputData<T>(ctx, "Out");
  const SoftmaxDims dims = GetSoftmaxDims(ctx, x);
  const auto& dev = cuda::Dev(ctx);
  if (dims.inner != 1) {
    StridedSoftmax<T> f;
    f.n = dims.n;
    f.inner = dims.inner;
    f.x = x.data<T>();
    f.out = out;
    if (dims.n > 0) cuda::ForEach(dev, dims.outer * dims.inner, f);
    return;
  }
  const int64_t rows = dims.outer, d = dims.n;
  if (rows == 0) return;
  SoftmaxRows<T>
      <<<cuda::RowBlocks(rows), cuda::RowThreads(d), 0, dev.stream()>>>(
          rows, d, x.data<T>(), out);
  cuda::CheckLaunch();
}

template <typename T>
void SoftmaxGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const SoftmaxGradArgs a = ReadSoftmaxGradArgs(ctx);
  T* dp = dx->mutable_data<T>(ctx.place());
  const auto& dev = cuda::Dev(ctx);
  const int64_t rows = a.dims.outer, d = a.dims.n;
  if (a.dims.inner != 1) {
    StridedSoftmaxGrad<T> f;
    f.n = d;
    f.inner = a.dims.inner;
    f.y = a.out.data<T>();
    f.g = a.dout.data<T>();
    f.dx = dp;
    cuda::ForEach(dev, rows * a.dims.inner, f);
    return;
  }
  if (rows == 0) return;
  SoftmaxGradRows<T>
      <<<cuda::RowBlocks(rows), cuda::RowThreads(d), 0, dev.stream()>>>(
          rows, d, a.out.data<T>(), a.dout.data<T>(), dp);
  cuda::CheckLaunch();
}

}  // namespace

REGISTER_FLOAT_KERNELS(softmax, kCUDA, SoftmaxKernel);
REGISTER_FLOAT_KERNELS(softmax_grad, kCUDA, SoftmaxGradKernel);

}  // namespace ops
}  // namespace fluid
