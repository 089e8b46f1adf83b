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

namespace fluid {
namespace ops {
namespace {

// A label that selects a class: in range and not ignored.
__device__ __forceinline__ bool Counts(int64_t label, int64_t classes,
                                       int64_t ignore) {
  return label != ignore && label >= 0 && label < classes;
}

template <typename T>
struct CrossEntropyForward {
  const T* x;
  const int64_t* label;
  int64_t classes, ignore;
  T* y;
  __device__ void operator()(int64_t i) const {
    const int64_t l = label[i];
    y[i] = Counts(l, classes, ignore) ? -log(x[i * classes + l]) : T(0);
  }
};

// One thread per element of dX: -dY[i] / X[i, j] at the label, 0 elsewhere.
template <typename T>
struct CrossEntropyBackward {
  const T* x;
  const int64_t* label;
  const T* dy;
  int64_t classes, ignore;
  T* dx;
  __device__ void operator()(int64_t idx) const {
    const int64_t i = idx / classes, j = idx - i * classes;
    const int64_t l = label[i];
    dx[idx] = Counts(l, classes, ignore) && j == l ? -dy[i] / x[idx] : T(0);
  }
};

template <typename T>
void CrossEntropyKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& label = ctx.Input("Label");
  T* y = cuda::OutputData<T>(ctx, "Y");
  const int rank = x.shape().rank();
  const int64_t rows = x.shape().Product(0, rank - 1);
  const int64_t classes = x.shape()[rank - 1];
  const int64_t ignore = ctx.Attr<int32_t>("ignore_index");
  cuda::ForEach(cuda::Dev(ctx), rows,
                CrossEntropyForward<T>{x.data<T>(), label.data<int64_t>(),
                                       classes, ignore, y});
}

template <typename T>
void CrossEntropyGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& label = ctx.Input("Label");
  const Tensor& dy = ctx.Input(GradSlot("Y"));
  const int rank = x.shape().rank();
  const int64_t rows = x.shape().Product(0, rank - 1);
  const int64_t classes = x.shape()[rank - 1];
  const int64_t ignore = ctx.Attr<int32_t>("ignore_index");
  T* dxd = dx->mutable_data<T>(ctx.place());
  cuda::ForEach(cuda::Dev(ctx), rows * classes,
                CrossEntropyBackward<T>{x.data<T>(), label.data<int64_t>(),
                                        dy.data<T>(), classes, ignore, dxd});
}

}  // namespace

REGISTER_FLOAT_KERNELS(cross_entropy, kCUDA, CrossEntropyKernel);
REGISTER_FLOAT_KERNELS(cross_entropy_grad, kCUDA, CrossEntropyGradKernel);

}  // namespace ops
}  // namespace fluid
