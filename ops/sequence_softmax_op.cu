// CUDA kernels for sequence_softmax and its gradient (schemas in
// sequence_softmax_op.cc): one thread per sequence, running the CPU
// kernel's math (ops/sequence_softmax_op.h).
#include "ops/cuda/sequence_helpers.cuh"
#include "ops/grad_checks.h"
#include "ops/sequence_softmax_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct SoftmaxFunctor {
  const int64_t* lod;
  const T* x;
  T* out;
  __device__ void operator()(int64_t i) const {
    SoftmaxSequence(x, out, lod[i], lod[i + 1]);
  }
};

template <typename T>
struct SoftmaxGradFunctor {
  const int64_t* lod;
  const T* y;
  const T* g;
  T* dx;
  __device__ void operator()(int64_t i) const {
    SoftmaxSequenceGrad(y, g, dx, lod[i], lod[i + 1]);
  }
};

template <typename T>
void SequenceSoftmaxKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const LoD& lod = x.lod();
  const auto& dev = cuda::Dev(ctx);
  SoftmaxFunctor<T> f;
  f.x = x.data<T>();
  f.out = cuda::OutputData<T>(ctx, "Out");
  if (LoDCount(lod) == 0) return;
  f.lod = cuda::CopyLoDsToDevice(dev, {&lod}).lod[0];
  cuda::ForEach(dev, LoDCount(lod), f);
}

template <typename T>
void SequenceSoftmaxGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const Tensor& out = ctx.Input("Out");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  CheckOutGradLikeOut(ctx, out, dout);
  const LoD& lod = out.lod();
  const auto& dev = cuda::Dev(ctx);
  SoftmaxGradFunctor<T> f;
  f.y = out.data<T>();
  f.g = dout.data<T>();
  f.dx = cuda::OutputData<T>(ctx, GradSlot("X"));
  if (LoDCount(lod) == 0) return;
  f.lod = cuda::CopyLoDsToDevice(dev, {&lod}).lod[0];
  cuda::ForEach(dev, LoDCount(lod), f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(sequence_softmax, kCUDA, SequenceSoftmaxKernel);
REGISTER_FLOAT_KERNELS(sequence_softmax_grad, kCUDA, SequenceSoftmaxGradKernel);

}  // namespace ops
}  // namespace fluid
