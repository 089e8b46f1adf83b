// CUDA kernels of the activations (schemas in activation_op.cc).
// The per-element math is ops/activation_functors.h, which the CPU kernels'
// reference tests also check; bfloat16 and float16 run it on floats and
// round once.
#include "ops/activation_functors.h"
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/grad_checks.h"
#include "ops/half_math.h"

namespace fluid {
namespace ops {
namespace {

template <typename T, typename F>
struct Forward {
  F f;
  const T* x;
  T* out;
  __device__ void operator()(int64_t i) const {
    out[i] = FromCompute<T>(f.Forward(ToCompute(x[i])));
  }
};

// `base` is X or Out, whichever the functor's Backward takes.
template <typename T, typename F>
struct Backward {
  F f;
  const T* base;
  const T* dout;
  T* dx;
  __device__ void operator()(int64_t i) const {
    dx[i] = FromCompute<T>(f.Backward(ToCompute(base[i]), ToCompute(dout[i])));
  }
};

template <typename F>
struct Kernels {
  template <typename T>
  static void Fwd(const ExecutionContext& ctx) {
    const Tensor& x = ctx.Input("X");
    T* out = cuda::OutputData<T>(ctx, "Out");
    cuda::ForEach(cuda::Dev(ctx), x.numel(),
                  Forward<T, F>{F::Make(ctx), x.data<T>(), out});
  }
  template <typename T>
  static void Bwd(const ExecutionContext& ctx) {
    Tensor* dx = ctx.Output(GradSlot("X"));
    if (dx == nullptr) return;
    const char* slot = F::kGradFromX ? "X" : "Out";
    const Tensor& base = ctx.Input(slot);
    const Tensor& dout = ctx.Input(GradSlot("Out"));
    CheckOutGradLike(ctx, slot, base, dout);
    T* d = dx->mutable_data<T>(ctx.place());
    cuda::ForEach(
        cuda::Dev(ctx), base.numel(),
        Backward<T, F>{F::Make(ctx), base.data<T>(), dout.data<T>(), d});
  }
};

}  // namespace

REGISTER_FLOAT_KERNELS(relu, kCUDA, Kernels<ReluFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(relu_grad, kCUDA, Kernels<ReluFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(sigmoid, kCUDA, Kernels<SigmoidFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(sigmoid_grad, kCUDA, Kernels<SigmoidFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(tanh, kCUDA, Kernels<TanhFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(tanh_grad, kCUDA, Kernels<TanhFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(leaky_relu, kCUDA, Kernels<LeakyReluFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(leaky_relu_grad, kCUDA, Kernels<LeakyReluFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(elu, kCUDA, Kernels<EluFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(elu_grad, kCUDA, Kernels<EluFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(relu6, kCUDA, Kernels<Relu6Functor>::Fwd);
REGISTER_FLOAT_KERNELS(relu6_grad, kCUDA, Kernels<Relu6Functor>::Bwd);
REGISTER_FLOAT_KERNELS(brelu, kCUDA, Kernels<BReluFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(brelu_grad, kCUDA, Kernels<BReluFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(exp, kCUDA, Kernels<ExpFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(exp_grad, kCUDA, Kernels<ExpFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(log, kCUDA, Kernels<LogFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(log_grad, kCUDA, Kernels<LogFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(sqrt, kCUDA, Kernels<SqrtFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(sqrt_grad, kCUDA, Kernels<SqrtFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(square, kCUDA, Kernels<SquareFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(square_grad, kCUDA, Kernels<SquareFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(abs, kCUDA, Kernels<AbsFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(abs_grad, kCUDA, Kernels<AbsFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(pow, kCUDA, Kernels<ScalarPowFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(pow_grad, kCUDA, Kernels<ScalarPowFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(softplus, kCUDA, Kernels<SoftplusFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(softplus_grad, kCUDA, Kernels<SoftplusFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(softsign, kCUDA, Kernels<SoftsignFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(softsign_grad, kCUDA, Kernels<SoftsignFunctor>::Bwd);
REGISTER_FLOAT_KERNELS(gelu, kCUDA, Kernels<GeluFunctor>::Fwd);
REGISTER_FLOAT_KERNELS(gelu_grad, kCUDA, Kernels<GeluFunctor>::Bwd);

REGISTER_HALF_KERNELS(relu, kCUDA, Kernels<ReluFunctor>::Fwd);
REGISTER_HALF_KERNELS(relu_grad, kCUDA, Kernels<ReluFunctor>::Bwd);
REGISTER_HALF_KERNELS(sigmoid, kCUDA, Kernels<SigmoidFunctor>::Fwd);
REGISTER_HALF_KERNELS(sigmoid_grad, kCUDA, Kernels<SigmoidFunctor>::Bwd);
REGISTER_HALF_KERNELS(tanh, kCUDA, Kernels<TanhFunctor>::Fwd);
REGISTER_HALF_KERNELS(tanh_grad, kCUDA, Kernels<TanhFunctor>::Bwd);
REGISTER_HALF_KERNELS(leaky_relu, kCUDA, Kernels<LeakyReluFunctor>::Fwd);
REGISTER_HALF_KERNELS(leaky_relu_grad, kCUDA, Kernels<LeakyReluFunctor>::Bwd);
REGISTER_HALF_KERNELS(elu, kCUDA, Kernels<EluFunctor>::Fwd);
REGISTER_HALF_KERNELS(elu_grad, kCUDA, Kernels<EluFunctor>::Bwd);
REGISTER_HALF_KERNELS(relu6, kCUDA, Kernels<Relu6Functor>::Fwd);
REGISTER_HALF_KERNELS(relu6_grad, kCUDA, Kernels<Relu6Functor>::Bwd);
REGISTER_HALF_KERNELS(brelu, kCUDA, Kernels<BReluFunctor>::Fwd);
REGISTER_HALF_KERNELS(brelu_grad, kCUDA, Kernels<BReluFunctor>::Bwd);
REGISTER_HALF_KERNELS(exp, kCUDA, Kernels<ExpFunctor>::Fwd);
REGISTER_HALF_KERNELS(exp_grad, kCUDA, Kernels<ExpFunctor>::Bwd);
REGISTER_HALF_KERNELS(log, kCUDA, Kernels<LogFunctor>::Fwd);
REGISTER_HALF_KERNELS(log_grad, kCUDA, Kernels<LogFunctor>::Bwd);
REGISTER_HALF_KERNELS(sqrt, kCUDA, Kernels<SqrtFunctor>::Fwd);
REGISTER_HALF_KERNELS(sqrt_grad, kCUDA, Kernels<SqrtFunctor>::Bwd);
REGISTER_HALF_KERNELS(square, kCUDA, Kernels<SquareFunctor>::Fwd);
REGISTER_HALF_KERNELS(square_grad, kCUDA, Kernels<SquareFunctor>::Bwd);
REGISTER_HALF_KERNELS(abs, kCUDA, Kernels<AbsFunctor>::Fwd);
REGISTER_HALF_KERNELS(abs_grad, kCUDA, Kernels<AbsFunctor>::Bwd);
REGISTER_HALF_KERNELS(pow, kCUDA, Kernels<ScalarPowFunctor>::Fwd);
REGISTER_HALF_KERNELS(pow_grad, kCUDA, Kernels<ScalarPowFunctor>::Bwd);
REGISTER_HALF_KERNELS(softplus, kCUDA, Kernels<SoftplusFunctor>::Fwd);
REGISTER_HALF_KERNELS(softplus_grad, kCUDA, Kernels<SoftplusFunctor>::Bwd);
REGISTER_HALF_KERNELS(softsign, kCUDA, Kernels<SoftsignFunctor>::Fwd);
REGISTER_HALF_KERNELS(softsign_grad, kCUDA, Kernels<SoftsignFunctor>::Bwd);
REGISTER_HALF_KERNELS(gelu, kCUDA, Kernels<GeluFunctor>::Fwd);
REGISTER_HALF_KERNELS(gelu_grad, kCUDA, Kernels<GeluFunctor>::Bwd);

}  // namespace ops
}  // namespace fluid
