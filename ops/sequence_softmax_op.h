// sequence_softmax's math, written once for the CPU and CUDA kernels: a
// softmax over the rows [begin, end) of one sequence (one value per row).
#pragma once

#include <cmath>
#include <cstdint>

#include "ops/hostdevice.h"

namespace fluid {
namespace ops {

// out[r] = exp(x[r] - max) / sum over the sequence, the max subtracted so
// that large inputs do not overflow.
template <typename T>
FLUID_HOSTDEVICE void SoftmaxSequence(const T* x, T* out, int64_t begin,
                                      int64_t end) {
  if (end <= begin) return;
  T mx = x[begin];
  for (int64_t r = begin + 1; r < end; ++r) mx = x[r] > mx ? x[r] : mx;
  T sum = 0;
  for (int64_t r = begin; r < end; ++r) {
    using std::exp;
    out[r] = exp(x[r] - mx);
    sum += out[r];
  }
  const T inv = T(1) / sum;
  for (int64_t r = begin; r < end; ++r) out[r] *= inv;
}

// dx[r] = (g[r] - sum over the sequence of g * y) * y[r].
template <typename T>
FLUID_HOSTDEVICE void SoftmaxSequenceGrad(const T* y, const T* g, T* dx,
                                          int64_t begin, int64_t end) {
  T dot = 0;
  for (int64_t r = begin; r < end; ++r) dot += g[r] * y[r];
  for (int64_t r = begin; r < end; ++r) dx[r] = (g[r] - dot) * y[r];
}

}  // namespace ops
}  // namespace fluid
