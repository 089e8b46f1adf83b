// What the ops that score classes against int64 labels (cross_entropy,
// softmax_with_cross_entropy) share, CPU and CUDA kernels alike: their
// checks and what their kernels read. Free of Eigen so that nvcc can compile
// the CUDA kernels that include it.
#pragma once

#include <cstdint>
#include <string>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// What a kernel of the cross-entropy family reads: its class scores
// [..., C] (X, Logits or Softmax) viewed as `rows` rows of `classes`
// scores, the int64 labels (one a row), and the label that marks a row as
// ignored (the ignore_index attr).
struct LabelArgs {
  const Tensor& scores;
  const Tensor& label;
  int64_t rows;
  int64_t classes;
  int64_t ignore;
};

// `scores_slot` is the input holding the scores. Defined in
// cross_entropy_op.cc.
LabelArgs ReadLabelArgs(const ExecutionContext& ctx,
                        const std::string& scores_slot);

// A label that selects a class: in range and not ignored. The CUDA kernels,
// which do not check labels, give every other row loss 0 and gradient 0.
FLUID_HOSTDEVICE bool LabelSelectsClass(int64_t label, int64_t classes,
                                        int64_t ignore) {
  return label != ignore && label >= 0 && label < classes;
}

// Checks `slot` [..., C] against Label [..., 1] int64; returns the shape of
// the per-row output ([..., 1]).
inline Shape CheckScoresAndLabel(const InferShapeContext& ctx,
                                 const std::string& op,
                                 const std::string& slot) {
  const std::string& xn = ctx.InputName(slot);
  const std::string& ln = ctx.InputName("Label");
  Shape x = ctx.GetInputShape(slot);
  Shape l = ctx.GetInputShape("Label");
  FLUID_ENFORCE(x.rank() >= 2, op, ": ", slot, " '", xn,
                "' must be at least 2-D [N, C], got ", x);
  FLUID_ENFORCE(ctx.GetInputDtype("Label") == DataType::kInt64, op, ": Label '",
                ln, "' must be int64, got ", ctx.GetInputDtype("Label"));
  Shape want = x;
  want[want.rank() - 1] = 1;
  FLUID_ENFORCE(ShapesCompatible(want, l), op, ": Label '", ln, "' has shape ",
                l, " but ", slot, " '", xn, "' has shape ", x,
                "; Label must be ", want);
  return want;
}

// Throws, naming the Label var, unless every label is in [0, classes) or
// equals ignore_index. Run before any output is written.
inline void CheckLabels(const ExecutionContext& ctx, const int64_t* label,
                        int64_t rows, int64_t classes, int64_t ignore_index) {
  for (int64_t i = 0; i < rows; ++i) {
    int64_t v = label[i];
    FLUID_ENFORCE((v >= 0 && v < classes) || v == ignore_index, "Label '",
                  ctx.InputName("Label"), "' holds ", v, " at row ", i,
                  ", outside [0, ", classes, ") (ignore_index is ",
                  ignore_index, ")");
  }
}

}  // namespace ops
}  // namespace fluid
