// What topk's and arg_max's CPU kernels (.cc) and CUDA kernels (.cu) share:
// the per-row selection, written once so that both places pick the same
// elements in the same order. Free of Eigen so that nvcc can compile it.
#pragma once

#include <cstdint>

#include "ops/hostdevice.h"

namespace fluid {
namespace ops {

// The order of selection: the larger value first, the lower index among
// equal values.
template <typename T>
FLUID_HOSTDEVICE bool RanksBefore(T a, int64_t ia, T b, int64_t ib) {
  return a > b || (a == b && ia < ib);
}

// The k best elements of row[0, d) in rank order, into vals[0, k) and
// idx[0, k). Each pass takes the best element ranked after the previous
// pick: O(k * d) and no scratch memory. A row holding NaN, which ranks
// against nothing, repeats its last pick.
template <typename T>
FLUID_HOSTDEVICE void TopKRow(const T* row, int64_t d, int64_t k, T* vals,
                              int64_t* idx) {
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t c = 0; c < d; ++c) {
      if (j > 0 && !RanksBefore(vals[j - 1], idx[j - 1], row[c], c)) continue;
      if (best < 0 || RanksBefore(row[c], c, row[best], best)) best = c;
    }
    if (best < 0) best = j > 0 ? idx[j - 1] : 0;
    vals[j] = row[best];
    idx[j] = best;
  }
}

// Whether row[label] is among the k best of row[0, d) in that order: fewer
// than k elements rank before it.
template <typename T>
FLUID_HOSTDEVICE bool InTopK(const T* row, int64_t d, int64_t label,
                             int64_t k) {
  int64_t before = 0;
  for (int64_t c = 0; c < d && before < k; ++c)
    before += RanksBefore(row[c], c, row[label], label);
  return before < k;
}

// The index along a dim of `dim` elements, `inner` apart, of the largest
// (the first among equals).
template <typename T>
FLUID_HOSTDEVICE int64_t ArgMaxAlong(const T* x, int64_t dim, int64_t inner) {
  int64_t best = 0;
  for (int64_t c = 1; c < dim; ++c)
    if (x[c * inner] > x[best * inner]) best = c;
  return best;
}

}  // namespace ops
}  // namespace fluid
