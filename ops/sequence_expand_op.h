// sequence_expand's row mapping, written once for the CPU and CUDA
// kernels. Sequence i of X (row i when X has no LoD) is repeated
// len_Y(i) times. `out_lod` holds one sequence per repetition when X has
// a LoD, so repetition j of X's sequence i (j in [y_lod[i], y_lod[i+1]))
// starts at Out row out_lod[j].
#pragma once

#include <cstdint>

#include "ops/hostdevice.h"
#include "ops/sequence_helpers.h"

namespace fluid {
namespace ops {

// Out's LoD at run time (defined in sequence_expand_op.cc).
LoD ExpandedLoD(const LoD& x_lod, const LoD& y_lod);
// The offsets of Y's level that attr ref_level picks, checked (a reference
// into Y).
const LoD& ExpandRefLoD(const ExecutionContext& ctx);

struct ExpandMap {
  bool x_has_lod;
  const int64_t* x_lod;    // when x_has_lod
  const int64_t* y_lod;    // count + 1 offsets
  const int64_t* out_lod;  // when x_has_lod: y_lod[count] + 1 offsets
  int64_t count;           // sequences of Y (and of X)

  // The row of X that row `o` of Out copies.
  FLUID_HOSTDEVICE int64_t SourceRow(int64_t o) const {
    if (!x_has_lod) return SequenceOfRow(y_lod, count, o);
    const int64_t j = SequenceOfRow(out_lod, y_lod[count], o);
    const int64_t i = SequenceOfRow(y_lod, count, j);
    return x_lod[i] + (o - out_lod[j]);
  }

  // dX of row `r`, column `c` (rows of `width`): the sum of dOut over the
  // copies of the row, in Out's order.
  template <typename T>
  FLUID_HOSTDEVICE T GradOf(const T* dout, int64_t width, int64_t r,
                            int64_t c) const {
    const int64_t i = x_has_lod ? SequenceOfRow(x_lod, count, r) : r;
    T sum = 0;
    for (int64_t j = y_lod[i]; j < y_lod[i + 1]; ++j) {
      const int64_t o = x_has_lod ? out_lod[j] + (r - x_lod[i]) : j;
      sum += dout[o * width + c];
    }
    return sum;
  }
};

}  // namespace ops
}  // namespace fluid
