// What gather's CPU kernels (gather_op.cc) and CUDA kernels (gather_op.cu)
// share: the checked shapes, read once on the host (defined in
// gather_op.cc). Free of Eigen so that nvcc can compile it.
#pragma once

#include <cstdint>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// X viewed as [rows, width]; Index holds `count` row numbers, int32 or
// int64.
struct GatherArgs {
  const Tensor& x;
  const Tensor& index;
  int64_t rows;
  int64_t width;
  int64_t count;
};

// gather and gather_grad's inputs X and Index, checked (X has a dim,
// Index is int32 or int64 of shape [N] or [N, 1]).
GatherArgs ReadGatherArgs(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
