// edit_distance's math, written once for the CPU and CUDA kernels: the
// Levenshtein distance (insertions, deletions and substitutions, each
// costing 1) between two token sequences, in one row of the dynamic
// programme. Free of Eigen so that nvcc compiles it.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// The distance between a[0..m) and b[0..n); row holds n + 1 scratch
// entries.
FLUID_HOSTDEVICE int64_t Levenshtein(const int64_t* a, int64_t m,
                                     const int64_t* b, int64_t n,
                                     int64_t* row) {
  if (m == 0) return n;
  if (n == 0) return m;
  for (int64_t j = 0; j <= n; ++j) row[j] = j;
  for (int64_t i = 1; i <= m; ++i) {
    int64_t diag = row[0];  // the distance of a[0..i-1) and b[0..j-1)
    row[0] = i;
    for (int64_t j = 1; j <= n; ++j) {
      const int64_t up = row[j];
      int64_t best = diag + (a[i - 1] == b[j - 1] ? 0 : 1);
      best = up + 1 < best ? up + 1 : best;
      best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
      row[j] = best;
      diag = up;
    }
  }
  return row[n];
}

// The {begin, length} pairs of Hyps' and Refs' sequences: from their LoD,
// or in padded mode from HypsLength and RefsLength (host tensors). Checked:
// as many sequences in both, lengths within the padded width, and with
// `normalized` no empty reference (the distance is divided by its length).
struct EditDistanceSpans {
  std::vector<int64_t> hyps, refs;
};
EditDistanceSpans EditDistanceInputs(const Tensor& hyps, const Tensor& refs,
                                     const Tensor* hyps_length,
                                     const Tensor* refs_length,
                                     bool normalized);

}  // namespace ops
}  // namespace fluid
