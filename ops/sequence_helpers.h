// What the sequence ops (ops/sequence_*_op.cc) share, CPU and CUDA alike:
// reading an input's level-1 LoD (src/framework/lod.h) with a clear error
// when it has none, and the per-element math both places compute. Free of
// Eigen so that nvcc can compile the CUDA kernels that include it.
#pragma once

#include <cstdint>
#include <string>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// Shape inference of a sequence op at run time: the LoD `slot` carries,
// checked to describe its rows; an input without one is an error naming
// the op, the slot and the variable. At compile time: empty (the offsets
// are known only when the batch is fed).
LoD SequenceInputLoD(InferShapeContext* ctx, const std::string& slot);

// Elements per row of `t`: the product of its dims after the first.
int64_t RowWidth(const Shape& s);

// The sequence `row` lies in: the i with lod[i] <= row < lod[i + 1], for
// lod[0..count]. Empty sequences hold no row and are never the answer.
FLUID_HOSTDEVICE int64_t SequenceOfRow(const int64_t* lod, int64_t count,
                                       int64_t row) {
  int64_t lo = 0, hi = count;  // lod[lo] <= row < lod[hi]
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (lod[mid] <= row) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace ops
}  // namespace fluid
