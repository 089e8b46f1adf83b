// What prelu's CPU kernels (prelu_op.cc) and CUDA kernels (prelu_op.cu)
// share: X viewed as [outer, alphas, inner] around the elements one alpha
// serves, read and checked on the host (defined in prelu_op.cc), and the
// per-element math. Free of Eigen so that nvcc can compile the CUDA kernels
// that include it.
#pragma once

#include <cstdint>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// X as [outer, alphas, inner]: element i uses Alpha[(i / inner) % alphas].
// mode "all": [1, 1, numel]; "channel": [N, C, product of dims 2..];
// "element": [N, product of dims 1.., 1].
struct PreluDims {
  int64_t outer = 0;
  int64_t alphas = 0;
  int64_t inner = 0;
  FLUID_HOSTDEVICE int64_t AlphaOf(int64_t i) const {
    return (i / inner) % alphas;
  }
  // The k-th element that alpha a serves, k in [0, outer * inner).
  FLUID_HOSTDEVICE int64_t ElementOf(int64_t a, int64_t k) const {
    return ((k / inner) * alphas + a) * inner + k % inner;
  }
};

// X's and Alpha's shapes checked against the mode attr.
PreluDims ReadPreluDims(const ExecutionContext& ctx);

template <typename T>
FLUID_HOSTDEVICE T Prelu(T x, T alpha) {
  return x > T(0) ? x : alpha * x;
}
template <typename T>
FLUID_HOSTDEVICE T PreluGradX(T x, T alpha, T dout) {
  return x > T(0) ? dout : alpha * dout;
}
template <typename T>
FLUID_HOSTDEVICE T PreluGradAlpha(T x, T dout) {
  return x > T(0) ? T(0) : x * dout;
}

}  // namespace ops
}  // namespace fluid
