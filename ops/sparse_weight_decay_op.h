// What sparse_weight_decay's CPU kernel (sparse_weight_decay_op.cc) and CUDA
// kernel (sparse_weight_decay_op.cu) read and check on the host, defined
// once in sparse_weight_decay_op.cc. Free of Eigen so that nvcc can compile
// the CUDA kernel that includes it.
#pragma once

#include "ops/sparse_values.h"

namespace fluid {
namespace ops {

// Param, and Grad's values with GradOut's (GradOut takes Grad's rows), all
// checked: Grad stands for a tensor shaped like Param and lists each row
// once, within Param's height.
struct SparseDecayArgs {
  const Tensor& param;
  SparseInOut grad;
  const std::vector<int64_t>& rows;
  int64_t width;
  bool l1;
};
SparseDecayArgs ReadSparseDecayArgs(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
