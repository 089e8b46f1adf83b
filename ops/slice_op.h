// What slice's CPU kernels (slice_op.cc) and CUDA kernels (slice_op.cu)
// share: the map from an element of Out to the element of Input it copies,
// and the host-side checks (defined once in slice_op.cc). Free of Eigen so
// that nvcc can compile it.
#pragma once

#include <cstdint>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

struct SliceIndex {
  int rank = 0;
  int64_t out_dims[Shape::kMaxRank] = {0};
  int64_t in_strides[Shape::kMaxRank] = {0};
  int64_t base = 0;  // Input's offset of Out's first element

  // Input's offset of Out's element i.
  FLUID_HOSTDEVICE int64_t Source(int64_t i) const {
    int64_t at = base;
    for (int d = rank - 1; d >= 0; --d) {
      at += (i % out_dims[d]) * in_strides[d];
      i /= out_dims[d];
    }
    return at;
  }
};

// The index for slicing `input` (slot Input) by the op's attrs (axes,
// starts, ends), checked.
SliceIndex MakeSliceIndex(const ExecutionContext& ctx, const Tensor& input);

}  // namespace ops
}  // namespace fluid
