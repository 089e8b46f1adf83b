// CUDA kernels for sigmoid_cross_entropy_with_logits and its gradient
// (schemas in the .cc), with the CPU's per-element formulas (the .h).
//
// With `normalize`, the count of elements not ignored is reduced on the
// device into element 0 of the output, which then serves as the divisor:
// elements [1, n) are written first, reading it, and element 0 last, by
// the one thread that reads it before overwriting it. No scratch memory and
// no copy to the host.
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/sigmoid_cross_entropy_with_logits_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct NotIgnored {
  const T* z;
  T ignore;
  __device__ T operator()(int64_t r, int64_t c) const {
    return z[c] != ignore ? T(1) : T(0);
  }
};

// out[i] (i from `first`) = the loss, or the gradient times dy, over the
// count at out[0] when `count_at_out0`.
template <typename T, bool kGrad>
struct SigmoidCeFunctor {
  const T* x;
  const T* z;
  const T* dy;
  T* out;
  T ignore;
  int64_t first;
  bool count_at_out0;
  __device__ void operator()(int64_t j) const {
    const int64_t i = first + j;
    T scale = T(1);
    if (count_at_out0) scale = T(1) / (out[0] > T(0) ? out[0] : T(1));
    out[i] = kGrad ? SigmoidCeGrad(x[i], z[i], ignore) * scale * dy[i]
                   : SigmoidCeLoss(x[i], z[i], ignore) * scale;
  }
};

template <typename T, bool kGrad>
void Run(const ExecutionContext& ctx, const T* dy, T* out) {
  const Tensor& x = ctx.Input("X");
  const auto& dev = cuda::Dev(ctx);
  const int64_t n = x.numel();
  SigmoidCeFunctor<T, kGrad> f;
  f.x = x.data<T>();
  f.z = ctx.Input("Label").data<T>();
  f.dy = dy;
  f.out = out;
  f.ignore = static_cast<T>(ctx.Attr<int32_t>("ignore_index"));
  f.count_at_out0 = ctx.Attr<bool>("normalize") && n > 0;
  f.first = 0;
  if (!f.count_at_out0) {
    cuda::ForEach(dev, n, f);
    return;
  }
  NotIgnored<T> count;
  count.z = f.z;
  count.ignore = f.ignore;
  cuda::RowReduce<T>(dev, 1, n, count, cuda::SumOp(), T(0), out);
  f.first = 1;
  cuda::ForEach(dev, n - 1, f);
  f.first = 0;
  cuda::ForEach(dev, 1, f);
}

template <typename T>
void SigmoidCeKernel(const ExecutionContext& ctx) {
  Run<T, false>(ctx, nullptr, cuda::OutputData<T>(ctx, "Out"));
}

template <typename T>
void SigmoidCeGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  Run<T, true>(ctx, ctx.Input(GradSlot("Out")).data<T>(),
               cuda::OutputData<T>(ctx, GradSlot("X")));
}

}  // namespace

REGISTER_FLOAT_KERNELS(sigmoid_cross_entropy_with_logits, kCUDA,
                       SigmoidCeKernel);
REGISTER_FLOAT_KERNELS(sigmoid_cross_entropy_with_logits_grad, kCUDA,
                       SigmoidCeGradKernel);

}  // namespace ops
}  // namespace fluid
