// CUDA kernels for cross_entropy and cross_entropy_grad (schemas in
// cross_entropy_op.cc): Y[i] = -log(X[i, Label[i]]) for hard int64 labels,
// rows labelled ignore_index getting loss 0 and gradient 0; with
// soft_label, Y[i] = -sum_j Label[i, j] * log(X[i, j]), one block per row
// in a fixed order.
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
struct SoftTerm {
  const T* x;
  const T* z;
  int64_t classes;
  __device__ T operator()(int64_t r, int64_t c) const {
    const int64_t j = r * classes + c;
    return -z[j] * log(x[j]);
  }
};

template <typename T>
struct SoftGrad {
  const T* x;
  const T* z;
  const T* dy;
  T* dx;
  int64_t classes;
  __device__ void operator()(int64_t j) const {
    dx[j] = -dy[j / classes] * z[j] / x[j];
  }
};

template <typename T>
void SoftCrossEntropyKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const int rank = x.shape().rank();
  SoftTerm<T> f;
  f.x = x.data<T>();
  f.z = ctx.Input("Label").data<T>();
  f.classes = x.shape()[rank - 1];
  cuda::RowReduce<T>(cuda::Dev(ctx), x.shape().Product(0, rank - 1), f.classes,
                     f, cuda::SumOp(), T(0), cuda::OutputData<T>(ctx, "Y"));
}

template <typename T>
void SoftCrossEntropyGradKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  SoftGrad<T> f;
  f.x = x.data<T>();
  f.z = ctx.Input("Label").data<T>();
  f.dy = ctx.Input(GradSlot("Y")).data<T>();
  f.dx = cuda::OutputData<T>(ctx, GradSlot("X"));
  f.classes = x.shape()[x.shape().rank() - 1];
  cuda::ForEach(cuda::Dev(ctx), x.numel(), f);
}

template <typename T>
void CrossEntropyKernel(const ExecutionContext& ctx) {
  if (ctx.Attr<bool>("soft_label")) return SoftCrossEntropyKernel<T>(ctx);
  const LabelArgs a = ReadLabelArgs(ctx, "X");
  T* y = cuda::OutputData<T>(ctx, "Y");
  cuda::ForEach(
      cuda::Dev(ctx), a.rows,
      CrossEntropyForward<T>{a.scores.data<T>(), a.label.data<int64_t>(),
                             a.classes, a.ignore, y});
}

template <typename T>
void CrossEntropyGradKernel(const ExecutionContext& ctx) {
  if (ctx.Attr<bool>("soft_label")) {
    if (ctx.HasOutput(GradSlot("X"))) SoftCrossEntropyGradKernel<T>(ctx);
    return;
  }
  cuda::LabelGradKernel<T, CrossEntropyGradAt>(ctx, GradSlot("X"), "X",
                                               GradSlot("Y"));
}

}  // namespace

REGISTER_FLOAT_KERNELS(cross_entropy, kCUDA, CrossEntropyKernel);
REGISTER_FLOAT_KERNELS(cross_entropy_grad, kCUDA, CrossEntropyGradKernel);

}  // namespace ops
}  // namespace fluid
