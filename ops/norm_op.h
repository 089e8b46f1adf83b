// What norm's CPU kernels (norm_op.cc) and CUDA kernels (norm_op.cu) share:
// X viewed as [pre, n, post] around the normalised axis, read and checked
// on the host (defined in norm_op.cc). Free of Eigen so that nvcc can
// compile the CUDA kernels that include it.
#pragma once

#include <cstdint>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// X as [pre, n, post]: n the length of the normalised axis, pre and post
// the products of the dims before and after it. Norm holds pre * post
// values; element (p, i, q) of X is at (p * n + i) * post + q.
struct NormDims {
  int64_t pre = 0;
  int64_t n = 0;
  int64_t post = 0;
};

// X's dims split at the op's axis (negative: from the end), checked; for
// norm_grad, Norm and Out@GRAD are checked against X too.
NormDims ReadNormDims(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
