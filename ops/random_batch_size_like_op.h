// What the CPU kernels (random_batch_size_like_op.cc) and CUDA kernels
// (random_batch_size_like_op.cu) of uniform_random_batch_size_like and
// gaussian_random_batch_size_like share: Out's run-time shape, read and
// checked on the host (defined in random_batch_size_like_op.cc).
#pragma once

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// The shape attr with dim output_dim_idx replaced by Input's dim
// input_dim_idx; Out resized to it. Its dtype, float32 or float64, is
// returned.
DataType ShapeRandomBatchSizeLike(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
