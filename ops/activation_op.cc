// Elementwise activations with Fluid's names and attributes. relu, sigmoid
// and tanh run as Eigen expressions; the others as loops over the
// per-element functors of activation_functors.h, which the CUDA kernels
// share. A gradient is computed from Out where Out determines it (relu:
// Out > 0 exactly where X > 0), so the backward pass does not need X kept
// alive, and from X otherwise. Every activation has bfloat16 and float16
// kernels too: the same math on floats, rounded once when stored
// (ops/half_math.h). gelu in float32 and 16 bits runs vectorised over the
// pool (ops/gelu_cpu.h).
#include <string>
#include <type_traits>

#include "ops/activation_functors.h"
#include "ops/gelu_cpu.h"
#include "ops/grad_checks.h"
#include "ops/half_cpu.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

void CheckOutGradLike(const ExecutionContext& ctx, const std::string& slot,
                      const Tensor& t, const Tensor& dout) {
  FLUID_ENFORCE(dout.shape() == t.shape(), ctx.type(), ": Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " differs from ", slot, " '", ctx.InputName(slot), "' ",
                t.shape());
}

void CheckOutGradLikeOut(const ExecutionContext& ctx, const Tensor& out,
                         const Tensor& dout) {
  CheckOutGradLike(ctx, "Out", out, dout);
}

namespace {

struct Relu {
  template <typename X>
  auto operator()(const X& x) const {
    return x.cwiseMax(static_cast<typename X::Scalar>(0));
  }
  // dX = dOut where Out > 0, else 0.
  template <typename O, typename G>
  auto Grad(const O& out, const G& dout) const {
    using T = typename O::Scalar;
    return (out > static_cast<T>(0)).select(dout, dout.constant(T(0)));
  }
};

struct Sigmoid {
  template <typename X>
  auto operator()(const X& x) const {
    return x.sigmoid();
  }
  // dX = dOut * Out * (1 - Out).
  template <typename O, typename G>
  auto Grad(const O& out, const G& dout) const {
    using T = typename O::Scalar;
    return dout * out * (static_cast<T>(1) - out);
  }
};

struct Tanh {
  template <typename X>
  auto operator()(const X& x) const {
    return x.tanh();
  }
  // dX = dOut * (1 - Out^2).
  template <typename O, typename G>
  auto Grad(const O& out, const G& dout) const {
    using T = typename O::Scalar;
    return dout * (static_cast<T>(1) - out * out);
  }
};

void ActivationInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", "Out");
}

void ActivationGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("Out", GradSlot("X"));
}

template <typename T, typename F>
void ActivationKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  if constexpr (IsHalfType<T>::value) {
    HalfChunks(ctx.device(), x.numel(), 8.0, x.data<T>(),
               static_cast<const T*>(nullptr), out->mutable_data<T>(),
               [](const float* a, const float*, float* o, int64_t len) {
                 EigenVec<float>(o, len) = F()(ConstEigenVec<float>(a, len));
               });
  } else {
    out->mutable_data<T>();
    Assign(ctx.device(), Vec<T>(out), F()(Vec<T>(x)));
  }
}

template <typename T, typename F>
void ActivationGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& out = ctx.Input("Out");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  CheckOutGradLikeOut(ctx, out, dout);
  if constexpr (IsHalfType<T>::value) {
    HalfChunks(ctx.device(), out.numel(), 4.0, out.data<T>(), dout.data<T>(),
               dx->mutable_data<T>(),
               [](const float* o, const float* g, float* d, int64_t len) {
                 EigenVec<float>(d, len) =
                     F().Grad(ConstEigenVec<float>(o, len),
                              ConstEigenVec<float>(g, len));
               });
  } else {
    dx->mutable_data<T>();
    Assign(ctx.device(), Vec<T>(dx), F().Grad(Vec<T>(out), Vec<T>(dout)));
  }
}

// The activations written as functors: X or Out is what the gradient reads.
template <typename F>
const char* GradBase() {
  return F::kGradFromX ? "X" : "Out";
}

template <typename F>
GradSpec FunctorGrad(const std::string& type) {
  GradSpec spec(type + "_grad");
  if (F::kGradFromX) {
    spec.Inputs({"X"});
  } else {
    spec.Outputs({"Out"});
  }
  return spec.OutGrads({"Out"}).InGrads({"X"});
}

template <typename F>
void FunctorGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape(GradBase<F>(), GradSlot("X"));
}

template <typename T, typename F>
void FunctorKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  const F f = F::Make(ctx);
  const T* in = x.data<T>();
  T* o = out->mutable_data<T>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i)
    o[i] = FromCompute<T>(f.Forward(ToCompute(in[i])));
}

template <typename T, typename F>
void FunctorGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const char* slot = GradBase<F>();
  const Tensor& base = ctx.Input(slot);
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  CheckOutGradLike(ctx, slot, base, dout);
  const F f = F::Make(ctx);
  const T* b = base.data<T>();
  const T* g = dout.data<T>();
  T* d = dx->mutable_data<T>();
  for (int64_t i = 0, n = base.numel(); i < n; ++i)
    d[i] = FromCompute<T>(f.Backward(ToCompute(b[i]), ToCompute(g[i])));
}

// Float work per element of the vectorised gelu (two exps in the gradient),
// for ParallelFor's split.
constexpr double kGeluCost = 40.0;

// gelu in float32 and the 16-bit types: GeluFloats (gelu_cpu.h) over the
// pool, 16-bit elements widened a chunk at a time. float64 keeps the
// functor kernel and libm's erf.
template <typename T>
void GeluKernel(const ExecutionContext& ctx) {
  if constexpr (std::is_same_v<T, double>) {
    FunctorKernel<double, GeluFunctor>(ctx);
  } else {
    const Tensor& x = ctx.Input("X");
    Tensor* out = ctx.Output("Out");
    const bool approximate = ctx.Attr<bool>("approximate");
    const T* in = x.data<T>();
    T* o = out->mutable_data<T>();
    if constexpr (IsHalfType<T>::value) {
      HalfChunks(
          ctx.device(), x.numel(), kGeluCost, in,
          static_cast<const T*>(nullptr), o,
          [approximate](const float* a, const float*, float* r, int64_t len) {
            GeluFloats(a, r, len, approximate);
          });
    } else {
      ParallelFor(ctx.device(), x.numel(), kGeluCost,
                  [&](int64_t begin, int64_t end) {
                    GeluFloats(in + begin, o + begin, end - begin, approximate);
                  });
    }
  }
}

template <typename T>
void GeluGradKernel(const ExecutionContext& ctx) {
  if constexpr (std::is_same_v<T, double>) {
    FunctorGradKernel<double, GeluFunctor>(ctx);
  } else {
    Tensor* dx = ctx.Output(GradSlot("X"));
    if (dx == nullptr) return;
    const Tensor& x = ctx.Input("X");
    const Tensor& dout = ctx.Input(GradSlot("Out"));
    CheckOutGradLike(ctx, "X", x, dout);
    const bool approximate = ctx.Attr<bool>("approximate");
    const T* in = x.data<T>();
    const T* g = dout.data<T>();
    T* d = dx->mutable_data<T>();
    if constexpr (IsHalfType<T>::value) {
      HalfChunks(
          ctx.device(), x.numel(), kGeluCost, in, g, d,
          [approximate](const float* a, const float* b, float* r, int64_t len) {
            GeluGradFloats(a, b, r, len, approximate);
          });
    } else {
      ParallelFor(ctx.device(), x.numel(), kGeluCost,
                  [&](int64_t begin, int64_t end) {
                    GeluGradFloats(in + begin, g + begin, d + begin,
                                   end - begin, approximate);
                  });
    }
  }
}

}  // namespace

REGISTER_OP(relu)
    .Doc("Out = max(X, 0).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .SetInferShape(ActivationInferShape)
    .SetGrad(
        GradSpec("relu_grad").Outputs({"Out"}).OutGrads({"Out"}).InGrads({"X"}))
    .CPUKernel<float>(ActivationKernel<float, Relu>)
    .CPUKernel<double>(ActivationKernel<double, Relu>)
    .CPUKernel<bfloat16>(ActivationKernel<bfloat16, Relu>)
    .CPUKernel<float16>(ActivationKernel<float16, Relu>);

REGISTER_GRAD_OP(relu_grad)
    .Doc("dX = dOut where Out > 0, else 0.")
    .SetInferShape(ActivationGradInferShape)
    .CPUKernel<float>(ActivationGradKernel<float, Relu>)
    .CPUKernel<double>(ActivationGradKernel<double, Relu>)
    .CPUKernel<bfloat16>(ActivationGradKernel<bfloat16, Relu>)
    .CPUKernel<float16>(ActivationGradKernel<float16, Relu>);

REGISTER_OP(sigmoid)
    .Doc("Out = 1 / (1 + exp(-X)).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .SetInferShape(ActivationInferShape)
    .SetGrad(GradSpec("sigmoid_grad")
                 .Outputs({"Out"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(ActivationKernel<float, Sigmoid>)
    .CPUKernel<double>(ActivationKernel<double, Sigmoid>)
    .CPUKernel<bfloat16>(ActivationKernel<bfloat16, Sigmoid>)
    .CPUKernel<float16>(ActivationKernel<float16, Sigmoid>);

REGISTER_GRAD_OP(sigmoid_grad)
    .Doc("dX = dOut * Out * (1 - Out).")
    .SetInferShape(ActivationGradInferShape)
    .CPUKernel<float>(ActivationGradKernel<float, Sigmoid>)
    .CPUKernel<double>(ActivationGradKernel<double, Sigmoid>)
    .CPUKernel<bfloat16>(ActivationGradKernel<bfloat16, Sigmoid>)
    .CPUKernel<float16>(ActivationGradKernel<float16, Sigmoid>);

REGISTER_OP(tanh)
    .Doc("Out = tanh(X).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .SetInferShape(ActivationInferShape)
    .SetGrad(
        GradSpec("tanh_grad").Outputs({"Out"}).OutGrads({"Out"}).InGrads({"X"}))
    .CPUKernel<float>(ActivationKernel<float, Tanh>)
    .CPUKernel<double>(ActivationKernel<double, Tanh>)
    .CPUKernel<bfloat16>(ActivationKernel<bfloat16, Tanh>)
    .CPUKernel<float16>(ActivationKernel<float16, Tanh>);

REGISTER_GRAD_OP(tanh_grad)
    .Doc("dX = dOut * (1 - Out^2).")
    .SetInferShape(ActivationGradInferShape)
    .CPUKernel<float>(ActivationGradKernel<float, Tanh>)
    .CPUKernel<double>(ActivationGradKernel<double, Tanh>)
    .CPUKernel<bfloat16>(ActivationGradKernel<bfloat16, Tanh>)
    .CPUKernel<float16>(ActivationGradKernel<float16, Tanh>);

// ---- the activations computed by functors (activation_functors.h)

REGISTER_OP(leaky_relu)
    .Doc("Out = X where X > 0, else alpha * X.")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .Attr<float>("alpha", 0.02f, "the slope where X <= 0")
    .SetInferShape(ActivationInferShape)
    .SetGrad(FunctorGrad<LeakyReluFunctor>("leaky_relu"))
    .CPUKernel<float>(FunctorKernel<float, LeakyReluFunctor>)
    .CPUKernel<double>(FunctorKernel<double, LeakyReluFunctor>)
    .CPUKernel<bfloat16>(FunctorKernel<bfloat16, LeakyReluFunctor>)
    .CPUKernel<float16>(FunctorKernel<float16, LeakyReluFunctor>);

REGISTER_GRAD_OP(leaky_relu_grad)
    .Doc("dX = dOut where X > 0, else alpha * dOut.")
    .SetInferShape(FunctorGradInferShape<LeakyReluFunctor>)
    .CPUKernel<float>(FunctorGradKernel<float, LeakyReluFunctor>)
    .CPUKernel<double>(FunctorGradKernel<double, LeakyReluFunctor>)
    .CPUKernel<bfloat16>(FunctorGradKernel<bfloat16, LeakyReluFunctor>)
    .CPUKernel<float16>(FunctorGradKernel<float16, LeakyReluFunctor>);

REGISTER_OP(elu)
    .Doc("Out = X where X > 0, else alpha * (exp(X) - 1).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .Attr<float>("alpha", 1.0f, "the scale of the negative part")
    .SetInferShape(ActivationInferShape)
    .SetGrad(FunctorGrad<EluFunctor>("elu"))
    .CPUKernel<float>(FunctorKernel<float, EluFunctor>)
    .CPUKernel<double>(FunctorKernel<double, EluFunctor>)
    .CPUKernel<bfloat16>(FunctorKernel<bfloat16, EluFunctor>)
    .CPUKernel<float16>(FunctorKernel<float16, EluFunctor>);

REGISTER_GRAD_OP(elu_grad)
    .Doc("dX = dOut where X > 0, else dOut * alpha * exp(X).")
    .SetInferShape(FunctorGradInferShape<EluFunctor>)
    .CPUKernel<float>(FunctorGradKernel<float, EluFunctor>)
    .CPUKernel<double>(FunctorGradKernel<double, EluFunctor>)
    .CPUKernel<bfloat16>(FunctorGradKernel<bfloat16, EluFunctor>)
    .CPUKernel<float16>(FunctorGradKernel<float16, EluFunctor>);

REGISTER_OP(relu6)
    .Doc("Out = min(max(X, 0), threshold).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .Attr<float>("threshold", 6.0f, "the upper bound")
    .SetInferShape(ActivationInferShape)
    .SetGrad(FunctorGrad<Relu6Functor>("relu6"))
    .CPUKernel<float>(FunctorKernel<float, Relu6Functor>)
    .CPUKernel<double>(FunctorKernel<double, Relu6Functor>)
    .CPUKernel<bfloat16>(FunctorKernel<bfloat16, Relu6Functor>)
    .CPUKernel<float16>(FunctorKernel<float16, Relu6Functor>);

REGISTER_GRAD_OP(relu6_grad)
    .Doc("dX = dOut where 0 < Out < threshold, else 0.")
    .SetInferShape(FunctorGradInferShape<Relu6Functor>)
    .CPUKernel<float>(FunctorGradKernel<float, Relu6Functor>)
    .CPUKernel<double>(FunctorGradKernel<double, Relu6Functor>)
    .CPUKernel<bfloat16>(FunctorGradKernel<bfloat16, Relu6Functor>)
    .CPUKernel<float16>(FunctorGradKernel<float16, Relu6Functor>);

REGISTER_OP(brelu)
    .Doc("Out = min(max(X, t_min), t_max).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .Attr<float>("t_min", 0.0f, "the lower bound")
    .Attr<float>("t_max", 24.0f, "the upper bound")
    .SetInferShape(ActivationInferShape)
    .SetGrad(FunctorGrad<BReluFunctor>("brelu"))
    .CPUKernel<float>(FunctorKernel<float, BReluFunctor>)
    .CPUKernel<double>(FunctorKernel<double, BReluFunctor>)
    .CPUKernel<bfloat16>(FunctorKernel<bfloat16, BReluFunctor>)
    .CPUKernel<float16>(FunctorKernel<float16, BReluFunctor>);

REGISTER_GRAD_OP(brelu_grad)
    .Doc("dX = dOut where t_min < Out < t_max, else 0.")
    .SetInferShape(FunctorGradInferShape<BReluFunctor>)
    .CPUKernel<float>(FunctorGradKernel<float, BReluFunctor>)
    .CPUKernel<double>(FunctorGradKernel<double, BReluFunctor>)
    .CPUKernel<bfloat16>(FunctorGradKernel<bfloat16, BReluFunctor>)
    .CPUKernel<float16>(FunctorGradKernel<float16, BReluFunctor>);

REGISTER_OP(exp)
    .Doc("Out = exp(X).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .SetInferShape(ActivationInferShape)
    .SetGrad(FunctorGrad<ExpFunctor>("exp"))
    .CPUKernel<float>(FunctorKernel<float, ExpFunctor>)
    .CPUKernel<double>(FunctorKernel<double, ExpFunctor>)
    .CPUKernel<bfloat16>(FunctorKernel<bfloat16, ExpFunctor>)
    .CPUKernel<float16>(FunctorKernel<float16, ExpFunctor>);

REGISTER_GRAD_OP(exp_grad)
    .Doc("dX = dOut * Out.")
    .SetInferShape(FunctorGradInferShape<ExpFunctor>)
    .CPUKernel<float>(FunctorGradKernel<float, ExpFunctor>)
    .CPUKernel<double>(FunctorGradKernel<double, ExpFunctor>)
    .CPUKernel<bfloat16>(FunctorGradKernel<bfloat16, ExpFunctor>)
    .CPUKernel<float16>(FunctorGradKernel<float16, ExpFunctor>);

REGISTER_OP(log)
    .Doc("Out = log(X) (NaN for X < 0).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .SetInferShape(ActivationInferShape)
    .SetGrad(FunctorGrad<LogFunctor>("log"))
    .CPUKernel<float>(FunctorKernel<float, LogFunctor>)
    .CPUKernel<double>(FunctorKernel<double, LogFunctor>)
    .CPUKernel<bfloat16>(FunctorKernel<bfloat16, LogFunctor>)
    .CPUKernel<float16>(FunctorKernel<float16, LogFunctor>);

REGISTER_GRAD_OP(log_grad)
    .Doc("dX = dOut / X.")
    .SetInferShape(FunctorGradInferShape<LogFunctor>)
    .CPUKernel<float>(FunctorGradKernel<float, LogFunctor>)
    .CPUKernel<double>(FunctorGradKernel<double, LogFunctor>)
    .CPUKernel<bfloat16>(FunctorGradKernel<bfloat16, LogFunctor>)
    .CPUKernel<float16>(FunctorGradKernel<float16, LogFunctor>);

REGISTER_OP(sqrt)
    .Doc("Out = sqrt(X) (NaN for X < 0).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .SetInferShape(ActivationInferShape)
    .SetGrad(FunctorGrad<SqrtFunctor>("sqrt"))
    .CPUKernel<float>(FunctorKernel<float, SqrtFunctor>)
    .CPUKernel<double>(FunctorKernel<double, SqrtFunctor>)
    .CPUKernel<bfloat16>(FunctorKernel<bfloat16, SqrtFunctor>)
    .CPUKernel<float16>(FunctorKernel<float16, SqrtFunctor>);

REGISTER_GRAD_OP(sqrt_grad)
    .Doc("dX = dOut / (2 * Out).")
    .SetInferShape(FunctorGradInferShape<SqrtFunctor>)
    .CPUKernel<float>(FunctorGradKernel<float, SqrtFunctor>)
    .CPUKernel<double>(FunctorGradKernel<double, SqrtFunctor>)
    .CPUKernel<bfloat16>(FunctorGradKernel<bfloat16, SqrtFunctor>)
    .CPUKernel<float16>(FunctorGradKernel<float16, SqrtFunctor>);

REGISTER_OP(square)
    .Doc("Out = X * X.")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .SetInferShape(ActivationInferShape)
    .SetGrad(FunctorGrad<SquareFunctor>("square"))
    .CPUKernel<float>(FunctorKernel<float, SquareFunctor>)
    .CPUKernel<double>(FunctorKernel<double, SquareFunctor>)
    .CPUKernel<bfloat16>(FunctorKernel<bfloat16, SquareFunctor>)
    .CPUKernel<float16>(FunctorKernel<float16, SquareFunctor>);

REGISTER_GRAD_OP(square_grad)
    .Doc("dX = dOut * 2 * X.")
    .SetInferShape(FunctorGradInferShape<SquareFunctor>)
    .CPUKernel<float>(FunctorGradKernel<float, SquareFunctor>)
    .CPUKernel<double>(FunctorGradKernel<double, SquareFunctor>)
    .CPUKernel<bfloat16>(FunctorGradKernel<bfloat16, SquareFunctor>)
    .CPUKernel<float16>(FunctorGradKernel<float16, SquareFunctor>);

REGISTER_OP(abs)
    .Doc("Out = |X|.")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .SetInferShape(ActivationInferShape)
    .SetGrad(FunctorGrad<AbsFunctor>("abs"))
    .CPUKernel<float>(FunctorKernel<float, AbsFunctor>)
    .CPUKernel<double>(FunctorKernel<double, AbsFunctor>)
    .CPUKernel<bfloat16>(FunctorKernel<bfloat16, AbsFunctor>)
    .CPUKernel<float16>(FunctorKernel<float16, AbsFunctor>);

REGISTER_GRAD_OP(abs_grad)
    .Doc("dX = dOut * sign(X).")
    .SetInferShape(FunctorGradInferShape<AbsFunctor>)
    .CPUKernel<float>(FunctorGradKernel<float, AbsFunctor>)
    .CPUKernel<double>(FunctorGradKernel<double, AbsFunctor>)
    .CPUKernel<bfloat16>(FunctorGradKernel<bfloat16, AbsFunctor>)
    .CPUKernel<float16>(FunctorGradKernel<float16, AbsFunctor>);

REGISTER_OP(pow)
    .Doc("Out = X^factor.")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .Attr<float>("factor", 1.0f, "the exponent")
    .SetInferShape(ActivationInferShape)
    .SetGrad(FunctorGrad<ScalarPowFunctor>("pow"))
    .CPUKernel<float>(FunctorKernel<float, ScalarPowFunctor>)
    .CPUKernel<double>(FunctorKernel<double, ScalarPowFunctor>)
    .CPUKernel<bfloat16>(FunctorKernel<bfloat16, ScalarPowFunctor>)
    .CPUKernel<float16>(FunctorKernel<float16, ScalarPowFunctor>);

REGISTER_GRAD_OP(pow_grad)
    .Doc("dX = dOut * factor * X^(factor - 1).")
    .SetInferShape(FunctorGradInferShape<ScalarPowFunctor>)
    .CPUKernel<float>(FunctorGradKernel<float, ScalarPowFunctor>)
    .CPUKernel<double>(FunctorGradKernel<double, ScalarPowFunctor>)
    .CPUKernel<bfloat16>(FunctorGradKernel<bfloat16, ScalarPowFunctor>)
    .CPUKernel<float16>(FunctorGradKernel<float16, ScalarPowFunctor>);

REGISTER_OP(softplus)
    .Doc("Out = log(1 + exp(X)).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .SetInferShape(ActivationInferShape)
    .SetGrad(FunctorGrad<SoftplusFunctor>("softplus"))
    .CPUKernel<float>(FunctorKernel<float, SoftplusFunctor>)
    .CPUKernel<double>(FunctorKernel<double, SoftplusFunctor>)
    .CPUKernel<bfloat16>(FunctorKernel<bfloat16, SoftplusFunctor>)
    .CPUKernel<float16>(FunctorKernel<float16, SoftplusFunctor>);

REGISTER_GRAD_OP(softplus_grad)
    .Doc("dX = dOut * sigmoid(X).")
    .SetInferShape(FunctorGradInferShape<SoftplusFunctor>)
    .CPUKernel<float>(FunctorGradKernel<float, SoftplusFunctor>)
    .CPUKernel<double>(FunctorGradKernel<double, SoftplusFunctor>)
    .CPUKernel<bfloat16>(FunctorGradKernel<bfloat16, SoftplusFunctor>)
    .CPUKernel<float16>(FunctorGradKernel<float16, SoftplusFunctor>);

REGISTER_OP(softsign)
    .Doc("Out = X / (1 + |X|).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .SetInferShape(ActivationInferShape)
    .SetGrad(FunctorGrad<SoftsignFunctor>("softsign"))
    .CPUKernel<float>(FunctorKernel<float, SoftsignFunctor>)
    .CPUKernel<double>(FunctorKernel<double, SoftsignFunctor>)
    .CPUKernel<bfloat16>(FunctorKernel<bfloat16, SoftsignFunctor>)
    .CPUKernel<float16>(FunctorKernel<float16, SoftsignFunctor>);

REGISTER_GRAD_OP(softsign_grad)
    .Doc("dX = dOut / (1 + |X|)^2.")
    .SetInferShape(FunctorGradInferShape<SoftsignFunctor>)
    .CPUKernel<float>(FunctorGradKernel<float, SoftsignFunctor>)
    .CPUKernel<double>(FunctorGradKernel<double, SoftsignFunctor>)
    .CPUKernel<bfloat16>(FunctorGradKernel<bfloat16, SoftsignFunctor>)
    .CPUKernel<float16>(FunctorGradKernel<float16, SoftsignFunctor>);

REGISTER_OP(gelu)
    .Doc(
        "Out = X * Phi(X) = 0.5 * X * (1 + erf(X / sqrt(2))); with "
        "approximate, 0.5 * X * (1 + tanh(sqrt(2 / pi) * (X + 0.044715 "
        "X^3))).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .Attr<bool>("approximate", false, "use the tanh approximation")
    .SetInferShape(ActivationInferShape)
    .SetGrad(FunctorGrad<GeluFunctor>("gelu"))
    .CPUKernel<float>(GeluKernel<float>)
    .CPUKernel<double>(GeluKernel<double>)
    .CPUKernel<bfloat16>(GeluKernel<bfloat16>)
    .CPUKernel<float16>(GeluKernel<float16>);

REGISTER_GRAD_OP(gelu_grad)
    .Doc("dX = dOut * (Phi(X) + X * phi(X)) (or the tanh form's derivative).")
    .SetInferShape(FunctorGradInferShape<GeluFunctor>)
    .CPUKernel<float>(GeluGradKernel<float>)
    .CPUKernel<double>(GeluGradKernel<double>)
    .CPUKernel<bfloat16>(GeluGradKernel<bfloat16>)
    .CPUKernel<float16>(GeluGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
