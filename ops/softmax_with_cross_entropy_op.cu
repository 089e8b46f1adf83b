// CUDA kernels for softmax_with_cross_entropy and its gradient (schemas in
// softmax_with_cross_entropy_op.cc), with the CPU kernel's formulas: after
// subtracting the row max m, Softmax = exp(x - m) * (1 / sum) and
// Loss = log(sum) - (x[label] - m); Logits@GRAD = Softmax * g, minus g at
// the label. One block per row, reductions in a fixed order (deterministic
// run to run). Rows labelled ignore_index get loss 0 and gradient 0. With
// soft_label, Loss = sum_j Label_j * (log(sum) - (x_j - m)) in the same
// block, and Logits@GRAD = (Softmax * sum_j Label_j - Label) * g, the label
// sums a row reduction into the context's workspace.
//
// The CPU kernels reject a label outside [0, C) (other than ignore_index)
// before writing anything. The labels live in device memory here, so that
// check would need a copy back and a synchronisation on every step; instead
// such a row is skipped like an ignored one (loss 0, gradient 0; its
// Softmax is still computed) and no memory outside the row is read.
// Validate labels on the host (or run the CPU kernel) to catch bad data.
#include "ops/cuda/dense_helpers.cuh"
#include "ops/cuda/label_grad.cuh"
#include "ops/label_helpers.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
__global__ void SoftmaxCrossEntropyRows(int64_t rows, int64_t classes,
                                        const T* logits, const int64_t* label,
                                        int64_t ignore, T* softmax, T* loss) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* x = logits + r * classes;
    const cuda::SoftmaxRowStats<T> st =
        cuda::BlockSoftmaxRow(x, classes, softmax + r * classes);
    if (threadIdx.x == 0) {
      const int64_t l = label[r];
      loss[r] = LabelSelectsClass(l, classes, ignore)
                    ? log(st.sum) - (x[l] - st.max)
                    : T(0);
    }
  }
}

// Soft labels: the softmax of each row and the loss against the label
// probabilities of the same row.
template <typename T>
__global__ void SoftLabelRows(int64_t rows, int64_t classes, const T* logits,
                              const T* label, T* softmax, T* loss) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* x = logits + r * classes;
    const T* z = label + r * classes;
    const cuda::SoftmaxRowStats<T> st =
        cuda::BlockSoftmaxRow(x, classes, softmax + r * classes);
    const T lse = log(st.sum);
    T acc = 0;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
      acc += z[c] * (lse - (x[c] - st.max));
    acc = cuda::BlockReduce(acc, cuda::SumOp(), T(0));
    if (threadIdx.x == 0) loss[r] = acc;
  }
}

template <typename T>
struct LabelAt {
  const T* label;
  int64_t classes;
  __device__ T operator()(int64_t r, int64_t c) const {
    return label[r * classes + c];
  }
};

// An element of Logits@GRAD with soft labels: (Softmax * zsum - Label) * g
// on its row.
template <typename T>
struct SoftLabelGrad {
  const T* softmax;
  const T* label;
  const T* zsum;
  const T* dloss;
  T* dlogits;
  int64_t classes;
  __device__ void operator()(int64_t j) const {
    const int64_t i = j / classes;
    dlogits[j] = (softmax[j] * zsum[i] - label[j]) * dloss[i];
  }
};

template <typename T>
void SoftLabelKernel(const ExecutionContext& ctx) {
  const Tensor& logits = ctx.Input("Logits");
  const int rank = logits.shape().rank();
  const int64_t rows = logits.shape().Product(0, rank - 1);
  const int64_t classes = logits.shape()[rank - 1];
  T* sd = cuda::OutputData<T>(ctx, "Softmax");
  T* lossd = cuda::OutputData<T>(ctx, "Loss");
  if (rows == 0) return;
  const auto& dev = cuda::Dev(ctx);
  if (classes == 0) {
    cuda::ZeroAsync(dev, lossd, sizeof(T) * static_cast<size_t>(rows));
    return;
  }
  SoftLabelRows<T>
      <<<cuda::RowBlocks(rows), cuda::RowThreads(classes), 0, dev.stream()>>>(
          rows, classes, logits.data<T>(), ctx.Input("Label").data<T>(), sd,
          lossd);
  cuda::CheckLaunch();
}

template <typename T>
void SoftLabelGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("Logits"))) return;
  const Tensor& softmax = ctx.Input("Softmax");
  const int rank = softmax.shape().rank();
  const int64_t rows = softmax.shape().Product(0, rank - 1);
  const int64_t classes = softmax.shape()[rank - 1];
  T* dx = cuda::OutputData<T>(ctx, GradSlot("Logits"));
  if (rows == 0 || classes == 0) return;
  const auto& dev = cuda::Dev(ctx);
  const T* label = ctx.Input("Label").data<T>();
  T* zsum = static_cast<T*>(dev.Workspace(sizeof(T) * rows));
  cuda::RowReduce<T>(dev, rows, classes, LabelAt<T>{label, classes},
                     cuda::SumOp(), T(0), zsum);
  cuda::ForEach(
      dev, rows * classes,
      SoftLabelGrad<T>{softmax.data<T>(), label, zsum,
                       ctx.Input(GradSlot("Loss")).data<T>(), dx, classes});
}

// An element of Logits@GRAD on a counted row: Softmax[i, j] * g, minus g
// at the label, g = Loss@GRAD[i].
template <typename T>
struct SoftmaxCrossEntropyGradAt {
  const T* softmax;
  const T* dloss;
  __device__ T operator()(int64_t i, int64_t idx, bool at_label) const {
    const T g = dloss[i];
    const T v = softmax[idx] * g;
    return at_label ? v - g : v;
  }
};

template <typename T>
void SoftmaxWithCrossEntropyKernel(const ExecutionContext& ctx) {
  if (ctx.Attr<bool>("soft_label")) return SoftLabelKernel<T>(ctx);
  const LabelArgs a = ReadLabelArgs(ctx, "Logits");
  T* sd = cuda::OutputData<T>(ctx, "Softmax");
  T* lossd = cuda::OutputData<T>(ctx, "Loss");
  if (a.rows == 0) return;
  const auto& dev = cuda::Dev(ctx);
  if (a.classes == 0) {
    // No class to select: every row is ignored (or has a bad label).
    cuda::ZeroAsync(dev, lossd, sizeof(T) * static_cast<size_t>(a.rows));
    return;
  }
  SoftmaxCrossEntropyRows<T>
      <<<cuda::RowBlocks(a.rows), cuda::RowThreads(a.classes), 0,
         dev.stream()>>>(a.rows, a.classes, a.scores.data<T>(),
                         a.label.data<int64_t>(), a.ignore, sd, lossd);
  cuda::CheckLaunch();
}

template <typename T>
void SoftmaxWithCrossEntropyGradKernel(const ExecutionContext& ctx) {
  if (ctx.Attr<bool>("soft_label")) return SoftLabelGradKernel<T>(ctx);
  cuda::LabelGradKernel<T, SoftmaxCrossEntropyGradAt>(
      ctx, GradSlot("Logits"), "Softmax", GradSlot("Loss"));
}

}  // namespace

REGISTER_FLOAT_KERNELS(softmax_with_cross_entropy, kCUDA,
                       SoftmaxWithCrossEntropyKernel);
REGISTER_FLOAT_KERNELS(softmax_with_cross_entropy_grad, kCUDA,
                       SoftmaxWithCrossEntropyGradKernel);

}  // namespace ops
}  // namespace fluid
