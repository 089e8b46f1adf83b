// What expand's CPU kernels (expand_op.cc) and CUDA kernels (expand_op.cu)
// share: the map between X's elements and Out's (X tiled expand_times[d]
// times along each dim d) and the host-side checks (defined once in
// expand_op.cc). Free of Eigen so that nvcc can compile it.
#pragma once

#include <cstdint>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

struct ExpandIndex {
  int rank = 0;
  int64_t x_dims[Shape::kMaxRank] = {0};
  int64_t times[Shape::kMaxRank] = {0};
  int64_t out_dims[Shape::kMaxRank] = {0};
  int64_t copies = 1;  // the product of times: Out's elements per X's

  // X's element that Out's element i copies.
  FLUID_HOSTDEVICE int64_t Source(int64_t i) const {
    int64_t src = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      src += ((i % out_dims[d]) % x_dims[d]) * stride;
      i /= out_dims[d];
      stride *= x_dims[d];
    }
    return src;
  }
  // Out's element that is copy k (in [0, copies)) of X's element j.
  FLUID_HOSTDEVICE int64_t Copy(int64_t j, int64_t k) const {
    int64_t at = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t jd = j % x_dims[d], kd = k % times[d];
      at += (kd * x_dims[d] + jd) * stride;
      j /= x_dims[d];
      k /= times[d];
      stride *= out_dims[d];
    }
    return at;
  }
};

// X@GRAD's element j: the sum of Out@GRAD over X's copies, in order.
template <typename T>
FLUID_HOSTDEVICE T ExpandGradAt(const ExpandIndex& index, const T* dout,
                                int64_t j) {
  double sum = 0;
  for (int64_t k = 0; k < index.copies; ++k)
    sum += static_cast<double>(dout[index.Copy(j, k)]);
  return static_cast<T>(sum);
}

// The index for expanding `x` by the op's expand_times attr, checked (one
// count per dim of x, each at least 1).
ExpandIndex MakeExpandIndex(const ExecutionContext& ctx, const Tensor& x);

}  // namespace ops
}  // namespace fluid
