// The gradient lists of the loss-scaling ops' CUDA kernels
// (check_finite_and_unscale_op.cu, update_loss_scaling_op.cu): up to
// kGradListSize (X, Out) pairs travel in one launch's arguments and are
// walked as one range of elements (X[0]'s, then X[1]'s, ...), so that a
// model's hundreds of gradients cost a launch per kGradListSize of them,
// not one each. Included only by ops/*.cu.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/cuda/cuda_helpers.cuh"
#include "ops/loss_scaling.h"

namespace fluid {
namespace ops {
namespace cuda {

// 48 pairs: about 1.4 KB of launch arguments, well inside CUDA's 4 KB.
constexpr int kGradListSize = 48;

struct GradList {
  const void* x[kGradListSize];
  void* out[kGradListSize];
  // Element i of the range belongs to the first pair k with i < end[k].
  int64_t end[kGradListSize];
  DataType dtype[kGradListSize];
  int count;

  // The pair holding element i of the range (binary search over end).
  __device__ int Find(int64_t i) const {
    int lo = 0;
    int hi = count - 1;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (i < end[mid]) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  }
  __device__ int64_t Begin(int k) const { return k == 0 ? 0 : end[k - 1]; }
};

// Calls launch(list, elements) for the pairs of `pairs` that hold elements
// and that `take` accepts, kGradListSize at a time, in order.
template <typename Take, typename Launch>
void ForEachGradList(const std::vector<GradPair>& pairs, Take take,
                     Launch launch) {
  GradList list;
  list.count = 0;
  int64_t total = 0;
  for (const GradPair& p : pairs) {
    const int64_t n = p.x->numel();
    if (n == 0 || !take(p)) continue;
    const int k = list.count++;
    list.x[k] = p.x->raw_data();
    list.out[k] = p.out->raw_mutable_data(p.out->place());
    list.dtype[k] = p.x->dtype();
    total += n;
    list.end[k] = total;
    if (list.count == kGradListSize) {
      launch(list, total);
      list.count = 0;
      total = 0;
    }
  }
  if (list.count > 0) launch(list, total);
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
