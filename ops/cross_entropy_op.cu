// CUDA kernels for cross_entropy and cross_entropy_grad (schemas in
// cross_entropy_op.cc): Y[i] = -log(X[i, Label[i]]) for hard int64 labels,
// rows labelled ignore_index getting loss 0 and gradient 0.
//
// The CPU kernels reject a label outside [0, C) (other than ignore_index)
// before writing anything. The labels live in device memory here, so that
// check would need a copy back and a synchronisation on every step; instead
// such a row is skipped like an ignored one (loss 0, gradient 0) and no
// memory outside X is read. Validate labels on the host (or run the CPU
// kernel) to catch bad data.
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/cuda/label_grad.cuh"
#include "ops/label_helpers.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct CrossEntropyForward {
  const T* x;
  const int64_t* label;
  int64_t classes, ignore;
  T* y;
  __device__ void operator()(int64_t i) const {
    const int64_t l = label[i];
    y[i] =
        LabelSelectsClass(l, classes, ignore) ? -log(x[i * classes + l]) : T(0);
  }
};

// An element of dX on a counted row: -dY[i] / X[i, j] at the label, 0
// elsewhere.
template <typename T>
struct CrossEntropyGradAt {
  const T* x;
  const T* dy;
  __device__ T operator()(int64_t i, int64_t idx, bool at_label) const {
    return at_label ? -dy[i] / x[idx] : T(0);
  }
};

template <typename T>
void CrossEntropyKernel(const ExecutionContext& ctx) {
  const LabelArgs a = ReadLabelArgs(ctx, "X");
  T* y = cuda::OutputData<T>(ctx, "Y");
  cuda::ForEach(
      cuda::Dev(ctx), a.rows,
      CrossEntropyForward<T>{a.scores.data<T>(), a.label.data<int64_t>(),
                             a.classes, a.ignore, y});
}

template <typename T>
void CrossEntropyGradKernel(const ExecutionContext& ctx) {
  cuda::LabelGradKernel<T, CrossEntropyGradAt>(ctx, GradSlot("X"), "X",
                                               GradSlot("Y"));
}

}  // namespace

REGISTER_FLOAT_KERNELS(cross_entropy, kCUDA, CrossEntropyKernel);
REGISTER_FLOAT_KERNELS(cross_entropy_grad, kCUDA, CrossEntropyGradKernel);

}  // namespace ops
}  // namespace fluid
