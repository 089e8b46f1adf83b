// Helpers for writing grad-op makers.
#pragma once

#include <string>
#include <vector>

#include "src/framework/op_registry.h"

namespace fluid {

// Builds the usual gradient op of `fwd` (see GradSpec): type `spec.type`,
// with the forward inputs named in `spec.inputs` and outputs named in
// `spec.outputs` passed through under their own slot names, "<slot>@GRAD"
// inputs for each slot of `spec.out_grads` (bound to the gradient vars of
// the forward outputs), and "<slot>@GRAD" outputs for each slot of
// `spec.in_grads` (the gradients of the forward inputs). The forward attrs
// are copied, and the op role becomes backward.
proto::OpDesc MakeGradOp(const proto::OpDesc& fwd, const GradSpec& spec);

// The slot name under which a gradient travels: "X" -> "X@GRAD".
inline std::string GradSlot(const std::string& slot) {
  return GradVarName(slot);
}

}  // namespace fluid
