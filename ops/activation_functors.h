// Per-element activation math shared by the CUDA kernels and the CPU
// reference checks. Each gradient is a function of Out (not X), so the
// backward pass does not keep X alive.
#pragma once

#include <cmath>

#include "ops/hostdevice.h"

namespace fluid {
namespace ops {

struct ReluFunctor {
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

struct SigmoidFunctor {
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

struct TanhFunctor {
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

}  // namespace ops
}  // namespace fluid
