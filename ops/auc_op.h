// What auc's CPU kernel (auc_op.cc) and CUDA kernel (auc_op.cu) share: the
// bucket of a prediction and the area under the ROC curve of a pair of
// histograms, written once so that both places count the same rows into the
// same buckets and add the same terms in the same order. Free of Eigen so
// that nvcc can compile it.
#pragma once

#include <cstdint>

#include "ops/hostdevice.h"

namespace fluid {
namespace ops {

// The rows of the stat histograms for a slide_steps attr: the window of
// the last slide_steps batches, or one row accumulating every batch (0).
FLUID_HOSTDEVICE int64_t AucStatRows(int32_t slide_steps) {
  return slide_steps > 0 ? slide_steps : 1;
}

// The bucket of probability p among num_thresholds + 1: floor(p *
// num_thresholds), the product taken in p's own type (as Fluid does, so a
// float32 prediction lands where float32 arithmetic puts it); -1 for a p
// outside [0, 1] or NaN.
template <typename T>
FLUID_HOSTDEVICE int64_t AucBucket(T p, int64_t num_thresholds) {
  if (!(p >= T(0) && p <= T(1))) return -1;
  const int64_t b = static_cast<int64_t>(p * static_cast<T>(num_thresholds));
  return b > num_thresholds ? num_thresholds : b;
}

// The area under the ROC curve drawn by the histograms pos and neg, each
// `rows` rows of `buckets` counts, the rows summed per bucket. Thresholds
// are taken from the highest bucket down; each bucket moves the curve from
// (false positives, true positives) so far to the counts with it included,
// and the trapezoid under that step is added. The area is divided by
// positives * negatives, so it is the probability that a positive row
// scores a higher bucket than a negative one, a shared bucket counting one
// half. 0 while there are no positives or no negatives.
FLUID_HOSTDEVICE double AucArea(const int64_t* pos, const int64_t* neg,
                                int64_t rows, int64_t buckets) {
  double tp = 0, fp = 0, area = 0;
  for (int64_t b = buckets - 1; b >= 0; --b) {
    int64_t p = 0, n = 0;
    for (int64_t r = 0; r < rows; ++r) {
      p += pos[r * buckets + b];
      n += neg[r * buckets + b];
    }
    const double tp_before = tp;
    tp += static_cast<double>(p);
    fp += static_cast<double>(n);
    area += static_cast<double>(n) * (tp_before + tp) / 2.0;
  }
  return tp > 0 && fp > 0 ? area / tp / fp : 0.0;
}

}  // namespace ops
}  // namespace fluid
