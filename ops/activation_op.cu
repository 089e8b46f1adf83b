// CUDA kernels for relu, sigmoid and tanh (schemas in activation_op.cc).
// The per-element math is ops/activation_functors.h, which the CPU kernels'
// reference tests also check.
#include "ops/activation_functors.h"
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/grad_checks.h"

namespace fluid {
namespace ops {
namespace {

template <typename T, typename F>
struct Forward {
  const T* x;
  T* out;
  __device__ void operator()(int64_t i) const { out[i] = F::Forward(x[i]); }
};

template <typename T, typename F>
struct Backward {
  const T* out;
  const T* dout;
  T* dx;
  __device__ void operator()(int64_t i) const {
    dx[i] = F::Backward(out[i], dout[i]);
  }
};

template <typename F>
struct Kernels {
  template <typename T>
  static void Fwd(const ExecutionContext& ctx) {
    const Tensor& x = ctx.Input("X");
    T* out = cuda::OutputData<T>(ctx, "Out");
    cuda::ForEach(cuda::Dev(ctx), x.numel(), Forward<T, F>{x.data<T>(), out});
  }
  template <typename T>
  static void Bwd(const ExecutionContext& ctx) {
    Tensor* dx = ctx.Output(GradSlot("X"));
    if (dx == nullptr) return;
    const Tensor& out = ctx.Input("Out");
    const Tensor& dout = ctx.Input(GradSlot("Out"));
    CheckOutGradLikeOut(ctx, out, dout);
    T* d = dx->mutable_data<T>(ctx.place());
    cuda::ForEach(cuda::Dev(ctx), out.numel(),
                  Backward<T, F>{out.data<T>(), dout.data<T>(), d});
  }
};

}  // namespace

REGISTER_FLOAT_KERNELS(relu, kCUDA, Kernels<ReluFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(relu_grad, kCUDA, Kernels<ReluFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(sigmoid, kCUDA, Kernels<SigmoidFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(sigmoid_grad, kCUDA, Kernels<SigmoidFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(tanh, kCUDA, Kernels<TanhFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(tanh_grad, kCUDA, Kernels<TanhFunctor>::Bwd);

}  // namespace ops
}  // namespace fluid
