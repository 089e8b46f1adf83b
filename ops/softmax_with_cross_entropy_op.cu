// CUDA kernels for softmax_with_cross_entropy and its gradient (schemas in
// softmax_with_cross_entropy_op.cc), with the CPU kernel's formulas: after
// subtracting the row max m, Softmax = exp(x - m) * (1 / sum) and
// Loss = log(sum) - (x[label] - m); Logits@GRAD = Softmax * g, minus g at
// the label. One block per row, reductions in a fixed order (deterministic
// run to run). Rows labelled ignore_index get loss 0 and gradient 0.
//
// The CPU kernels reject a label outside [0, C) (other than ignore_index)
// before writing anything. The labels live in device memory here, so that
// check would need a copy back and a synchronisation on every step; instead
// such a row is skipped like an ignored one (loss 0, gradient 0; its
// Softmax is still computed) and no memory outside the row is read.
// Validate labels on the host (or run the CPU kernel) to catch bad data.
#include "ops/cuda/dense_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

// A label that selects a class: in range and not ignored.
__device__ __forceinline__ bool Counts(int64_t label, int64_t classes,
                                       int64_t ignore) {
  return label != ignore && label >= 0 && label < classes;
}

template <typename T>
__global__ void SoftmaxCrossEntropyRows(int64_t rows, int64_t classes,
                                        const T* logits, const int64_t* label,
                                        int64_t ignore, T* softmax, T* loss) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* x = logits + r * classes;
    T* s = softmax + r * classes;
    // The row's first logit seeds every thread's max (and stands in for the
    // identity), so no infinity is needed.
    T mx = x[0];
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x)
      mx = cuda::MaxOp()(mx, x[j]);
    mx = cuda::BlockReduce(mx, cuda::MaxOp(), x[0]);
    T sum = 0;
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) {
      const T e = exp(x[j] - mx);
      s[j] = e;
      sum += e;
    }
    sum = cuda::BlockReduce(sum, cuda::SumOp(), T(0));
    const T inv = T(1) / sum;
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) s[j] *= inv;
    if (threadIdx.x == 0) {
      const int64_t l = label[r];
      loss[r] = Counts(l, classes, ignore) ? log(sum) - (x[l] - mx) : T(0);
    }
  }
}

// One thread per element of Logits@GRAD.
template <typename T>
struct SoftmaxCrossEntropyBackward {
  const T* softmax;
  const int64_t* label;
  const T* dloss;
  int64_t classes, ignore;
  T* dx;
  __device__ void operator()(int64_t idx) const {
    const int64_t i = idx / classes, j = idx - i * classes;
    const int64_t l = label[i];
    if (!Counts(l, classes, ignore)) {
      dx[idx] = T(0);
      return;
    }
    const T g = dloss[i];
    const T v = softmax[idx] * g;
    dx[idx] = j == l ? v - g : v;
  }
};

template <typename T>
void SoftmaxWithCrossEntropyKernel(const ExecutionContext& ctx) {
  const Tensor& logits = ctx.Input("Logits");
  const Tensor& label = ctx.Input("Label");
  const int rank = logits.shape().rank();
  const int64_t rows = logits.shape().Product(0, rank - 1);
  const int64_t classes = logits.shape()[rank - 1];
  const int64_t ignore = ctx.Attr<int32_t>("ignore_index");
  T* sd = cuda::OutputData<T>(ctx, "Softmax");
  T* lossd = cuda::OutputData<T>(ctx, "Loss");
  if (rows == 0) return;
  const auto& dev = cuda::Dev(ctx);
  if (classes == 0) {
    // No class to select: every row is ignored (or has a bad label).
    cuda::ZeroAsync(dev, lossd, sizeof(T) * static_cast<size_t>(rows));
    return;
  }
  SoftmaxCrossEntropyRows<T>
      <<<cuda::RowBlocks(rows), cuda::RowThreads(classes), 0, dev.stream()>>>(
          rows, classes, logits.data<T>(), label.data<int64_t>(), ignore, sd,
          lossd);
  cuda::CheckLaunch();
}

template <typename T>
void SoftmaxWithCrossEntropyGradKernel(const ExecutionContext& ctx) {
  Tensor* dlogits = ctx.Output(GradSlot("Logits"));
  if (dlogits == nullptr) return;
  const Tensor& softmax = ctx.Input("Softmax");
  const Tensor& label = ctx.Input("Label");
  const Tensor& dloss = ctx.Input(GradSlot("Loss"));
  const int rank = softmax.shape().rank();
  const int64_t rows = softmax.shape().Product(0, rank - 1);
  const int64_t classes = softmax.shape()[rank - 1];
  const int64_t ignore = ctx.Attr<int32_t>("ignore_index");
  T* dxd = dlogits->mutable_data<T>(ctx.place());
  cuda::ForEach(
      cuda::Dev(ctx), rows * classes,
      SoftmaxCrossEntropyBackward<T>{softmax.data<T>(), label.data<int64_t>(),
                                     dloss.data<T>(), classes, ignore, dxd});
}

}  // namespace

REGISTER_FLOAT_KERNELS(softmax_with_cross_entropy, kCUDA,
                       SoftmaxWithCrossEntropyKernel);
REGISTER_FLOAT_KERNELS(softmax_with_cross_entropy_grad, kCUDA,
                       SoftmaxWithCrossEntropyGradKernel);

}  // namespace ops
}  // namespace fluid
