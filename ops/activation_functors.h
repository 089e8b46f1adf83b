// Per-element activation math shared by the CUDA kernels and the CPU
// kernels (relu, sigmoid and tanh run on the CPU as Eigen expressions and
// their tests check them against these). A functor's Backward takes Out
// when Out determines the derivative, so the backward pass does not keep X
// alive, and X otherwise (kGradFromX). Make(ctx) reads the op's attributes
// into the functor; functors without attributes are empty.
#pragma once

#include <cmath>

#include "ops/hostdevice.h"

namespace fluid {
namespace ops {

// The activations without attributes: Make ignores the op's context.
template <typename F>
struct Stateless {
  template <typename Ctx>
  static F Make(const Ctx&) {
    return F();
  }
};

struct ReluFunctor : Stateless<ReluFunctor> {
  static constexpr bool kGradFromX = false;
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x) {
    return x > T(0) ? x : T(0);
  }
  // dX = dOut where Out > 0, else 0.
  template <typename T>
  static FLUID_HOSTDEVICE T Backward(T out, T dout) {
    return out > T(0) ? dout : T(0);
  }
};

struct SigmoidFunctor : Stateless<SigmoidFunctor> {
  static constexpr bool kGradFromX = false;
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x) {
    return T(1) / (T(1) + exp(-x));
  }
  // dX = dOut * Out * (1 - Out).
  template <typename T>
  static FLUID_HOSTDEVICE T Backward(T out, T dout) {
    return dout * out * (T(1) - out);
  }
};

struct TanhFunctor : Stateless<TanhFunctor> {
  static constexpr bool kGradFromX = false;
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x) {
    return tanh(x);
  }
  // dX = dOut * (1 - Out^2).
  template <typename T>
  static FLUID_HOSTDEVICE T Backward(T out, T dout) {
    return dout * (T(1) - out * out);
  }
};

struct LeakyReluFunctor {
  static constexpr bool kGradFromX = true;  // alpha may be <= 0
  float alpha;
  template <typename Ctx>
  static LeakyReluFunctor Make(const Ctx& ctx) {
    LeakyReluFunctor f;
    f.alpha = ctx.template Attr<float>("alpha");
    return f;
  }
  template <typename T>
  FLUID_HOSTDEVICE T Forward(T x) const {
    return x > T(0) ? x : T(alpha) * x;
  }
  // dX = dOut where X > 0, else alpha * dOut.
  template <typename T>
  FLUID_HOSTDEVICE T Backward(T x, T dout) const {
    return x > T(0) ? dout : T(alpha) * dout;
  }
};

struct EluFunctor {
  static constexpr bool kGradFromX = true;
  float alpha;
  template <typename Ctx>
  static EluFunctor Make(const Ctx& ctx) {
    EluFunctor f;
    f.alpha = ctx.template Attr<float>("alpha");
    return f;
  }
  template <typename T>
  FLUID_HOSTDEVICE T Forward(T x) const {
    return x > T(0) ? x : T(alpha) * expm1(x);
  }
  // dX = dOut where X > 0, else dOut * alpha * exp(X).
  template <typename T>
  FLUID_HOSTDEVICE T Backward(T x, T dout) const {
    return x > T(0) ? dout : dout * T(alpha) * exp(x);
  }
};

struct Relu6Functor {
  static constexpr bool kGradFromX = false;
  float threshold;
  template <typename Ctx>
  static Relu6Functor Make(const Ctx& ctx) {
    Relu6Functor f;
    f.threshold = ctx.template Attr<float>("threshold");
    return f;
  }
  template <typename T>
  FLUID_HOSTDEVICE T Forward(T x) const {
    const T t(threshold);
    return x > T(0) ? (x < t ? x : t) : T(0);
  }
  // dX = dOut where 0 < Out < threshold (exactly where 0 < X < threshold).
  template <typename T>
  FLUID_HOSTDEVICE T Backward(T out, T dout) const {
    return out > T(0) && out < T(threshold) ? dout : T(0);
  }
};

struct BReluFunctor {
  static constexpr bool kGradFromX = false;
  float t_min;
  float t_max;
  template <typename Ctx>
  static BReluFunctor Make(const Ctx& ctx) {
    return {ctx.template Attr<float>("t_min"),
            ctx.template Attr<float>("t_max")};
  }
  template <typename T>
  FLUID_HOSTDEVICE T Forward(T x) const {
    const T lo(t_min), hi(t_max);
    return x > lo ? (x < hi ? x : hi) : lo;
  }
  // dX = dOut where t_min < Out < t_max (exactly where t_min < X < t_max).
  template <typename T>
  FLUID_HOSTDEVICE T Backward(T out, T dout) const {
    return out > T(t_min) && out < T(t_max) ? dout : T(0);
  }
};

struct ExpFunctor : Stateless<ExpFunctor> {
  static constexpr bool kGradFromX = false;
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x) {
    return exp(x);
  }
  // dX = dOut * Out.
  template <typename T>
  static FLUID_HOSTDEVICE T Backward(T out, T dout) {
    return dout * out;
  }
};

struct LogFunctor : Stateless<LogFunctor> {
  static constexpr bool kGradFromX = true;
  // NaN for X < 0, -inf at 0.
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x) {
    return log(x);
  }
  // dX = dOut / X.
  template <typename T>
  static FLUID_HOSTDEVICE T Backward(T x, T dout) {
    return dout / x;
  }
};

struct SqrtFunctor : Stateless<SqrtFunctor> {
  static constexpr bool kGradFromX = false;
  // NaN for X < 0.
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x) {
    return sqrt(x);
  }
  // dX = dOut / (2 * Out).
  template <typename T>
  static FLUID_HOSTDEVICE T Backward(T out, T dout) {
    return dout * T(0.5) / out;
  }
};

struct SquareFunctor : Stateless<SquareFunctor> {
  static constexpr bool kGradFromX = true;
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x) {
    return x * x;
  }
  // dX = dOut * 2 * X.
  template <typename T>
  static FLUID_HOSTDEVICE T Backward(T x, T dout) {
    return dout * T(2) * x;
  }
};

struct AbsFunctor : Stateless<AbsFunctor> {
  static constexpr bool kGradFromX = true;
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x) {
    return x < T(0) ? -x : x;
  }
  // dX = dOut * sign(X) (0 at X = 0).
  template <typename T>
  static FLUID_HOSTDEVICE T Backward(T x, T dout) {
    return x > T(0) ? dout : (x < T(0) ? -dout : T(0));
  }
};

struct ScalarPowFunctor {
  static constexpr bool kGradFromX = true;
  float factor;
  template <typename Ctx>
  static ScalarPowFunctor Make(const Ctx& ctx) {
    ScalarPowFunctor f;
    f.factor = ctx.template Attr<float>("factor");
    return f;
  }
  // NaN for X < 0 and a factor that is not an integer.
  template <typename T>
  FLUID_HOSTDEVICE T Forward(T x) const {
    return pow(x, T(factor));
  }
  // dX = dOut * factor * X^(factor - 1).
  template <typename T>
  FLUID_HOSTDEVICE T Backward(T x, T dout) const {
    return dout * T(factor) * pow(x, T(factor) - T(1));
  }
};

struct SoftplusFunctor : Stateless<SoftplusFunctor> {
  static constexpr bool kGradFromX = true;
  // log(1 + exp(X)), written so that neither side overflows.
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x) {
    return x > T(0) ? x + log1p(exp(-x)) : log1p(exp(x));
  }
  // dX = dOut * sigmoid(X).
  template <typename T>
  static FLUID_HOSTDEVICE T Backward(T x, T dout) {
    return dout / (T(1) + exp(-x));
  }
};

struct SoftsignFunctor : Stateless<SoftsignFunctor> {
  static constexpr bool kGradFromX = true;
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x) {
    return x / (T(1) + (x < T(0) ? -x : x));
  }
  // dX = dOut / (1 + |X|)^2.
  template <typename T>
  static FLUID_HOSTDEVICE T Backward(T x, T dout) {
    const T d = T(1) + (x < T(0) ? -x : x);
    return dout / (d * d);
  }
};

// gelu: X * Phi(X), Phi the standard normal CDF, exactly
// 0.5 * X * (1 + erf(X / sqrt(2))); with `approximate`, the tanh form
// 0.5 * X * (1 + tanh(sqrt(2 / pi) * (X + 0.044715 * X^3))).
struct GeluFunctor {
  static constexpr bool kGradFromX = true;
  bool approximate;
  template <typename Ctx>
  static GeluFunctor Make(const Ctx& ctx) {
    GeluFunctor f;
    f.approximate = ctx.template Attr<bool>("approximate");
    return f;
  }
  template <typename T>
  FLUID_HOSTDEVICE T Forward(T x) const {
    if (approximate) return T(0.5) * x * (T(1) + tanh(Inner(x)));
    return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
  }
  // Exact: dX = dOut * (Phi(X) + X * phi(X)), phi the normal density.
  // Approximate: with t = tanh(u(X)),
  // dX = dOut * (0.5 * (1 + t) + 0.5 * X * (1 - t^2) * u'(X)).
  template <typename T>
  FLUID_HOSTDEVICE T Backward(T x, T dout) const {
    if (approximate) {
      const T t = tanh(Inner(x));
      const T du = T(0.79788456080286535588) * (T(1) + T(0.134145) * x * x);
      return dout * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du);
    }
    const T cdf = T(0.5) * (T(1) + erf(x * T(0.70710678118654752440)));
    const T pdf = T(0.39894228040143267794) * exp(T(-0.5) * x * x);
    return dout * (cdf + x * pdf);
  }
  // sqrt(2 / pi) * (X + 0.044715 * X^3).
  template <typename T>
  static FLUID_HOSTDEVICE T Inner(T x) {
    return T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
  }
};

}  // namespace ops
}  // namespace fluid
