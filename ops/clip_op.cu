// CUDA kernels for clip and clip_grad (schemas in clip_op.cc, rule in
// clip_functors.h).
#include "ops/clip_op.h"
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct ClipForward {
  ClipFunctor<T> f;
  const T* x;
  T* out;
  __device__ void operator()(int64_t i) const { out[i] = f.Forward(x[i]); }
};

template <typename T>
struct ClipBackward {
  ClipFunctor<T> f;
  const T* x;
  const T* dout;
  T* dx;
  __device__ void operator()(int64_t i) const {
    dx[i] = f.Backward(x[i], dout[i]);
  }
};

template <typename T>
void ClipKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  ClipForward<T> u;
  u.f = MakeClipFunctor<T>(ctx);
  u.x = x.data<T>();
  u.out = cuda::OutputLike<T>(ctx, "Out", x);
  cuda::ForEach(cuda::Dev(ctx), x.numel(), u);
}

template <typename T>
void ClipGradKernel(const ExecutionContext& ctx) {
  if (ctx.Output(GradSlot("X")) == nullptr) return;
  const ClipGradInputs in = ReadClipGradInputs(ctx);
  ClipBackward<T> u;
  u.f = MakeClipFunctor<T>(ctx);
  u.x = in.x.data<T>();
  u.dout = in.dout.data<T>();
  u.dx = cuda::OutputLike<T>(ctx, GradSlot("X"), in.x);
  cuda::ForEach(cuda::Dev(ctx), in.x.numel(), u);
}

}  // namespace

REGISTER_FLOAT_KERNELS(clip, kCUDA, ClipKernel);
REGISTER_FLOAT_KERNELS(clip_grad, kCUDA, ClipGradKernel);

}  // namespace ops
}  // namespace fluid
