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
