// The CUDA copy of one piece of a concat or split (concat_split.h says how
// the pieces lie). Included only by concat_op.cu and split_op.cu.
#pragma once

#include "ops/concat_split.h"
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace cuda {

template <typename T>
struct PieceCopy {
  const T* src;
  T* dst;
  PieceColumns c;
  bool to_whole;
  __device__ void operator()(int64_t i) const {
    const int64_t r = i / c.width;
    const int64_t whole_at = r * c.whole_width + c.offset + (i - r * c.width);
    if (to_whole) {
      dst[whole_at] = src[i];
    } else {
      dst[i] = src[whole_at];
    }
  }
};

// One piece into its columns of the whole (`to_whole`), or out of them.
template <typename T>
void CopyPieceColumns(const ExecutionContext& ctx, const PieceColumns& c,
                      const T* src, T* dst, bool to_whole) {
  PieceCopy<T> f;
  f.src = src;
  f.dst = dst;
  f.c = c;
  f.to_whole = to_whole;
  ForEach(Dev(ctx), c.rows * c.width, f);  // nothing for an empty piece
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
