// What reshape's CPU kernels (reshape_op.cc) and CUDA kernels
// (reshape_op.cu) check on the host, defined once in reshape_op.cc. Free of
// Eigen so that nvcc can compile the CUDA kernels that include it.
#pragma once

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// The copy a reshape kernel makes: `src`'s elements into `dst`, already
// shaped, checked to hold as many elements.
struct ReshapeCopy {
  const Tensor* src = nullptr;
  Tensor* dst = nullptr;
};

// reshape: X into Out (sized by shape inference).
ReshapeCopy GetReshapeCopy(const ExecutionContext& ctx);

// reshape_grad: Out@GRAD into X@GRAD; `dst` is null when X@GRAD is not
// wanted (and nothing is checked).
ReshapeCopy GetReshapeGradCopy(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
