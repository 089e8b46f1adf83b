// CUDA kernels for smooth_l1_loss and its gradient (schemas and the CPU
// kernels in smooth_l1_loss_op.cc; the per-element math in
// smooth_l1_loss_op.h): Diff per element, then one block per row for the
// row's sum, in a fixed order (deterministic).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/smooth_l1_loss_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct SmoothL1Diff {
  const T* x;
  const T* y;
  const T* iw;
  T* diff;
  __device__ void operator()(int64_t i) const {
    diff[i] = iw ? iw[i] * (x[i] - y[i]) : x[i] - y[i];
  }
};

template <typename T>
struct SmoothL1RowTerm {
  const T* diff;
  const T* ow;
  int64_t cols;
  T sigma2;
  __device__ T operator()(int64_t r, int64_t c) const {
    const int64_t i = r * cols + c;
    const T l = SmoothL1(diff[i], sigma2);
    return ow ? ow[i] * l : l;
  }
};

template <typename T>
struct SmoothL1Backward {
  const T* diff;
  const T* iw;
  const T* ow;
  const T* dout;
  int64_t cols;
  T sigma2;
  T* dx;
  T* dy;
  __device__ void operator()(int64_t i) const {
    T g = dout[i / cols] * SmoothL1Grad(diff[i], sigma2);
    if (iw) g *= iw[i] * ow[i];
    if (dx) dx[i] = g;
    if (dy) dy[i] = -g;
  }
};

template <typename T>
T Sigma2(const ExecutionContext& ctx) {
  const T s = static_cast<T>(ctx.Attr<float>("sigma"));
  return s * s;
}

template <typename T>
void SmoothL1Kernel(const ExecutionContext& ctx) {
  const SmoothL1Dims d = ReadSmoothL1Dims(ctx);
  const auto& dev = cuda::Dev(ctx);
  const Tensor& x = ctx.Input("X");
  T* diff = cuda::OutputLike<T>(ctx, "Diff", x);
  cuda::ForEach(
      dev, x.numel(),
      SmoothL1Diff<T>{
          x.data<T>(), ctx.Input("Y").data<T>(),
          d.weighted ? ctx.Input("InsideWeight").data<T>() : nullptr, diff});
  T* out = ctx.Output("Out")->mutable_data<T>(Shape({d.rows, 1}), ctx.place());
  const T* ow = d.weighted ? ctx.Input("OutsideWeight").data<T>() : nullptr;
  cuda::RowReduce<T>(dev, d.rows, d.cols,
                     SmoothL1RowTerm<T>{diff, ow, d.cols, Sigma2<T>(ctx)},
                     cuda::SumOp(), T(0), out);
}

template <typename T>
void SmoothL1GradKernel(const ExecutionContext& ctx) {
  const SmoothL1Dims d = ReadSmoothL1Dims(ctx);
  const Tensor& diff = ctx.Input("Diff");
  SmoothL1Backward<T> f{
      diff.data<T>(),
      d.weighted ? ctx.Input("InsideWeight").data<T>() : nullptr,
      d.weighted ? ctx.Input("OutsideWeight").data<T>() : nullptr,
      ctx.Input(GradSlot("Out")).data<T>(),
      d.cols,
      Sigma2<T>(ctx),
      ctx.HasOutput(GradSlot("X"))
          ? cuda::OutputLike<T>(ctx, GradSlot("X"), diff)
          : nullptr,
      ctx.HasOutput(GradSlot("Y"))
          ? cuda::OutputLike<T>(ctx, GradSlot("Y"), diff)
          : nullptr};
  cuda::ForEach(cuda::Dev(ctx), diff.numel(), f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(smooth_l1_loss, kCUDA, SmoothL1Kernel);
REGISTER_FLOAT_KERNELS(smooth_l1_loss_grad, kCUDA, SmoothL1GradKernel);

}  // namespace ops
}  // namespace fluid
