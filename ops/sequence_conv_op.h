// sequence_conv's context window, written once for the CPU and CUDA
// kernels. Row r of the column matrix [rows, length * width] holds rows
// r + start, ..., r + start + length - 1 of X side by side, each replaced by
// zeros where it falls outside r's sequence (zero padding, not trainable).
#pragma once

#include <cstdint>

#include "ops/hostdevice.h"
#include "ops/sequence_helpers.h"

namespace fluid {
namespace ops {

struct ContextMap {
  const int64_t* lod;  // count + 1 offsets
  int64_t count;
  int64_t start;   // contextStart
  int64_t length;  // contextLength
  int64_t width;   // elements per row of X

  // Element `k` of the column matrix: the element of X it copies, or -1.
  FLUID_HOSTDEVICE int64_t SourceOf(int64_t k) const {
    const int64_t d = k % width;
    const int64_t j = (k / width) % length;
    const int64_t r = k / (width * length);
    const int64_t i = SequenceOfRow(lod, count, r);
    const int64_t s = r + start + j;
    return s >= lod[i] && s < lod[i + 1] ? s * width + d : -1;
  }

  // dX element `k`: the sum of dCol over the column elements that copy it,
  // in a fixed order (window position 0 first).
  template <typename T>
  FLUID_HOSTDEVICE T GradOf(const T* dcol, int64_t k) const {
    const int64_t d = k % width;
    const int64_t s = k / width;
    const int64_t i = SequenceOfRow(lod, count, s);
    T sum = 0;
    for (int64_t j = 0; j < length; ++j) {
      const int64_t r = s - start - j;
      if (r >= lod[i] && r < lod[i + 1])
        sum += dcol[(r * length + j) * width + d];
    }
    return sum;
  }
};

}  // namespace ops
}  // namespace fluid
