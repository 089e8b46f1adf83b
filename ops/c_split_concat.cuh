// The CUDA piece copy of c_split and c_concat (see c_split_concat.h): any
// dtype, moved as unsigned integers of its width. Included only by
// c_split_op.cu and c_concat_op.cu.
#pragma once

#include <cstdint>

#include "ops/c_split_concat.h"
#include "ops/concat_split.cuh"

namespace fluid {
namespace ops {
namespace cuda {

inline void CudaPieceCopy(const ExecutionContext& ctx, const PieceColumns& c,
                          const void* src, void* dst, bool to_whole,
                          size_t elem) {
  switch (elem) {
    case 1:
      return CopyPieceColumns(ctx, c, static_cast<const uint8_t*>(src),
                              static_cast<uint8_t*>(dst), to_whole);
    case 2:
      return CopyPieceColumns(ctx, c, static_cast<const uint16_t*>(src),
                              static_cast<uint16_t*>(dst), to_whole);
    case 4:
      return CopyPieceColumns(ctx, c, static_cast<const uint32_t*>(src),
                              static_cast<uint32_t*>(dst), to_whole);
    case 8:
      return CopyPieceColumns(ctx, c, static_cast<const uint64_t*>(src),
                              static_cast<uint64_t*>(dst), to_whole);
  }
  FLUID_THROW(ErrorCode::kUnimplemented, ctx.type(), ": no device copy for ",
              elem, "-byte elements");
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
