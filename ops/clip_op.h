// What clip's CPU kernels (clip_op.cc) and CUDA kernels (clip_op.cu) read
// and check on the host. Free of Eigen so that nvcc can compile it.
#pragma once

#include "ops/clip_functors.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// The bounds of clip, checked (min <= max; the error names the op's vars).
template <typename T>
ClipFunctor<T> MakeClipFunctor(const ExecutionContext& ctx) {
  const float lo = ctx.Attr<float>("min");
  const float hi = ctx.Attr<float>("max");
  FLUID_ENFORCE(lo <= hi, ctx.type(), " of '", ctx.InputName("X"), "': min ",
                lo, " must not exceed max ", hi);
  ClipFunctor<T> f;
  f.lo = static_cast<T>(lo);
  f.hi = static_cast<T>(hi);
  return f;
}

// The forward input and Out@GRAD of clip_grad, checked to match in shape.
struct ClipGradInputs {
  const Tensor& x;
  const Tensor& dout;
};
ClipGradInputs ReadClipGradInputs(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
