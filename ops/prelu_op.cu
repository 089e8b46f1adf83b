// CUDA kernels for prelu and prelu_grad (schemas and the CPU kernels in
// prelu_op.cc; the per-element math in prelu_op.h). dAlpha is one block per
// alpha, summed in a fixed order (deterministic).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/prelu_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct PreluForward {
  PreluDims d;
  const T* x;
  const T* alpha;
  T* out;
  __device__ void operator()(int64_t i) const {
    out[i] = Prelu(x[i], alpha[d.AlphaOf(i)]);
  }
};

template <typename T>
struct PreluBackwardX {
  PreluDims d;
  const T* x;
  const T* alpha;
  const T* dout;
  T* dx;
  __device__ void operator()(int64_t i) const {
    dx[i] = PreluGradX(x[i], alpha[d.AlphaOf(i)], dout[i]);
  }
};

template <typename T>
struct PreluBackwardAlpha {
  PreluDims d;
  const T* x;
  const T* dout;
  __device__ T operator()(int64_t a, int64_t k) const {
    const int64_t i = d.ElementOf(a, k);
    return PreluGradAlpha(x[i], dout[i]);
  }
};

template <typename T>
void PreluKernel(const ExecutionContext& ctx) {
  const PreluDims d = ReadPreluDims(ctx);
  const Tensor& x = ctx.Input("X");
  cuda::ForEach(cuda::Dev(ctx), x.numel(),
                PreluForward<T>{d, x.data<T>(), ctx.Input("Alpha").data<T>(),
                                cuda::OutputLike<T>(ctx, "Out", x)});
}

template <typename T>
void PreluGradKernel(const ExecutionContext& ctx) {
  const PreluDims d = ReadPreluDims(ctx);
  const auto& dev = cuda::Dev(ctx);
  const Tensor& x = ctx.Input("X");
  const Tensor& alpha = ctx.Input("Alpha");
  const T* dout = ctx.Input(GradSlot("Out")).data<T>();
  if (ctx.HasOutput(GradSlot("X"))) {
    cuda::ForEach(
        dev, x.numel(),
        PreluBackwardX<T>{d, x.data<T>(), alpha.data<T>(), dout,
                          cuda::OutputLike<T>(ctx, GradSlot("X"), x)});
  }
  if (ctx.HasOutput(GradSlot("Alpha"))) {
    cuda::RowReduce<T>(dev, alpha.numel(), d.outer * d.inner,
                       PreluBackwardAlpha<T>{d, x.data<T>(), dout},
                       cuda::SumOp(), T(0),
                       cuda::OutputLike<T>(ctx, GradSlot("Alpha"), alpha));
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(prelu, kCUDA, PreluKernel);
REGISTER_FLOAT_KERNELS(prelu_grad, kCUDA, PreluGradKernel);

}  // namespace ops
}  // namespace fluid
