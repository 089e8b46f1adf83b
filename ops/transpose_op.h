// What transpose's CPU kernels (transpose_op.cc) and CUDA kernels
// (transpose_op.cu) share: the map from an element of Out to the element of
// X it copies. Free of Eigen so that nvcc can compile it.
#pragma once

#include <cstdint>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// Out[..., i_d, ...] = X[..., i_axis[d] ...]: walking Out's dims in
// row-major order, dim d of Out steps X by the stride of X's dim axis[d].
struct TransposeIndex {
  int rank = 0;
  int64_t out_dims[Shape::kMaxRank] = {0};
  int64_t x_strides[Shape::kMaxRank] = {0};

  // The offset in X of Out's element `i`.
  FLUID_HOSTDEVICE int64_t Source(int64_t i) const {
    int64_t src = 0;
    for (int d = rank - 1; d >= 0; --d) {
      src += (i % out_dims[d]) * x_strides[d];
      i /= out_dims[d];
    }
    return src;
  }
};

// The index for transposing `x` by the op's axis attr (checked to be a
// permutation of x's dims). Defined in transpose_op.cc.
TransposeIndex MakeTransposeIndex(const ExecutionContext& ctx, const Tensor& x);

}  // namespace ops
}  // namespace fluid
