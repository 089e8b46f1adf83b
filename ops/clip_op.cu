// CUDA kernels for clip and clip_grad (schemas in clip_op.cc, rule in
// clip_functors.h). A sparse X's values are clipped as a dense X would be
// (ops/sparse_values.h). bfloat16 and float16 compare in float, as on the
// CPU.
#include "ops/clip_op.h"
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/half_math.h"
#include "ops/sparse_values.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct ClipForward {
  ClipFunctor<ComputeType<T>> f;
  const T* x;
  T* out;
  __device__ void operator()(int64_t i) const {
    out[i] = FromCompute<T>(f.Forward(ToCompute(x[i])));
  }
};

template <typename T>
struct ClipBackward {
  ClipFunctor<ComputeType<T>> f;
  const T* x;
  const T* dout;
  T* dx;
  __device__ void operator()(int64_t i) const {
    dx[i] = FromCompute<T>(f.Backward(ToCompute(x[i]), ToCompute(dout[i])));
  }
};

template <typename T>
void ClipValues(const ExecutionContext& ctx, const Tensor& x, Tensor* out) {
  ClipForward<T> u;
  u.f = MakeClipFunctor<ComputeType<T>>(ctx);
  u.x = x.data<T>();
  u.out = out->mutable_data<T>(x.shape(), ctx.place());
  cuda::ForEach(cuda::Dev(ctx), x.numel(), u);
}

template <typename T>
void ClipKernel(const ExecutionContext& ctx) {
  if (IsSparseInput(ctx, "X")) {
    const SparseInOut s = SparseValues(ctx, "X", "Out", true);
    return ClipValues<T>(ctx, s.x, s.out);
  }
  ClipValues<T>(ctx, ctx.Input("X"), ctx.Output("Out"));
}

template <typename T>
void ClipGradKernel(const ExecutionContext& ctx) {
  if (ctx.Output(GradSlot("X")) == nullptr) return;
  const ClipGradInputs in = ReadClipGradInputs(ctx);
  ClipBackward<T> u;
  u.f = MakeClipFunctor<ComputeType<T>>(ctx);
  u.x = in.x.data<T>();
  u.dout = in.dout.data<T>();
  u.dx = cuda::OutputLike<T>(ctx, GradSlot("X"), in.x);
  cuda::ForEach(cuda::Dev(ctx), in.x.numel(), u);
}

}  // namespace

REGISTER_FLOAT_KERNELS(clip, kCUDA, ClipKernel);
REGISTER_FLOAT_KERNELS(clip_grad, kCUDA, ClipGradKernel);
REGISTER_HALF_KERNELS(clip, kCUDA, ClipKernel);
REGISTER_HALF_KERNELS(clip_grad, kCUDA, ClipGradKernel);

}  // namespace ops
}  // namespace fluid
