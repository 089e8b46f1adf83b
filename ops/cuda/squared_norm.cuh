// Sums of squares over whole tensors on the device, accumulated in double
// in a fixed order (deterministic): the norms of lars_momentum, the
// squared_l2_norm and clip_by_norm ops. Included only by ops/*.cu.
#pragma once

#include <algorithm>

#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace cuda {

constexpr int64_t kNormCols = 4096;

template <typename T>
struct SquareAt {
  const T* x;
  int64_t n;
  __device__ double operator()(int64_t r, int64_t c) const {
    const int64_t i = r * kNormCols + c;
    const double v = i < n ? static_cast<double>(x[i]) : 0.0;
    return v * v;
  }
};

// Doubles of scratch SquaredNorms needs for `count` tensors of at most `n`
// elements each, results included.
inline int64_t SquaredNormScratch(int64_t n, int count) {
  return count * (std::max<int64_t>(1, CeilDiv(n, kNormCols)) + 1);
}

// out[k] = sum of xs[k][i]^2 over i in [0, n), k in [0, count), out on the
// device; `scratch` holds SquaredNormScratch(n, count) doubles and out is
// its last `count` entries. Returns out.
template <typename T>
double* SquaredNorms(const CUDADeviceContext& dev, const T* const* xs,
                     int count, int64_t n, double* scratch) {
  const int64_t rows = std::max<int64_t>(1, CeilDiv(n, kNormCols));
  double* out = scratch + count * rows;
  for (int k = 0; k < count; ++k) {
    double* partial = scratch + k * rows;
    RowReduce<double>(dev, rows, kNormCols, SquareAt<T>{xs[k], n}, SumOp(), 0.0,
                      partial);
    RowReduce<double>(dev, 1, rows, ReadAt<double>{partial}, SumOp(), 0.0,
                      out + k);
  }
  return out;
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
