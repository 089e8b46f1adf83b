// Per-element math of the elementwise binary ops beyond add and mul, written
// once for the CPU kernels (elementwise_op_function.h) and the CUDA ones
// (elementwise_op_function.cuh). Each op is a struct of three functions:
// Forward(x, y) = Out, and the two partial derivatives already multiplied by
// dOut, Dx(x, y, dout) and Dy(x, y, dout), where y is the element of Y that
// the broadcast pairs with x. The gradients read X and Y, never Out.
#pragma once

#include <cmath>

#include "ops/hostdevice.h"

namespace fluid {
namespace ops {

struct SubFunctor {
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x, T y) {
    return x - y;
  }
  template <typename T>
  static FLUID_HOSTDEVICE T Dx(T, T, T dout) {
    return dout;
  }
  template <typename T>
  static FLUID_HOSTDEVICE T Dy(T, T, T dout) {
    return -dout;
  }
};

struct DivFunctor {
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x, T y) {
    return x / y;
  }
  template <typename T>
  static FLUID_HOSTDEVICE T Dx(T, T y, T dout) {
    return dout / y;
  }
  // d(x / y)/dy = -x / y^2.
  template <typename T>
  static FLUID_HOSTDEVICE T Dy(T x, T y, T dout) {
    return -dout * x / (y * y);
  }
};

// As in Fluid, a tie (x == y) sends the whole gradient to Y, for max and for
// min alike: X receives it only where it is strictly larger (smaller).
struct MaxFunctor {
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x, T y) {
    return x > y ? x : y;
  }
  template <typename T>
  static FLUID_HOSTDEVICE T Dx(T x, T y, T dout) {
    return x > y ? dout : T(0);
  }
  template <typename T>
  static FLUID_HOSTDEVICE T Dy(T x, T y, T dout) {
    return x > y ? T(0) : dout;
  }
};

struct MinFunctor {
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x, T y) {
    return x < y ? x : y;
  }
  template <typename T>
  static FLUID_HOSTDEVICE T Dx(T x, T y, T dout) {
    return x < y ? dout : T(0);
  }
  template <typename T>
  static FLUID_HOSTDEVICE T Dy(T x, T y, T dout) {
    return x < y ? T(0) : dout;
  }
};

// Out = x^y. dX = y * x^(y - 1); dY = x^y * ln x, NaN for x < 0 as in Fluid
// (the real power of a negative base is defined for integer y only).
struct PowFunctor {
  template <typename T>
  static FLUID_HOSTDEVICE T Forward(T x, T y) {
    return pow(x, y);
  }
  template <typename T>
  static FLUID_HOSTDEVICE T Dx(T x, T y, T dout) {
    return dout * y * pow(x, y - T(1));
  }
  template <typename T>
  static FLUID_HOSTDEVICE T Dy(T x, T y, T dout) {
    return dout * pow(x, y) * log(x);
  }
};

}  // namespace ops
}  // namespace fluid
