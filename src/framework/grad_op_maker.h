// Helpers for writing grad-op makers.
#pragma once

#include <string>
#include <vector>

#include "src/framework/op_registry.h"

namespace fluid {

// Builds the usual gradient op of `fwd`: type `grad_type`, with the forward
// inputs named in `inputs` and outputs named in `outputs` passed through
// under their own slot names, "<slot>@GRAD" inputs for each slot of
// `out_grads` (bound to the gradient vars of the forward outputs), and
// "<slot>@GRAD" outputs for each slot of `in_grads` (the gradients of the
// forward inputs). The forward attrs are copied, and the op role becomes
// backward.
proto::OpDesc MakeGradOp(const proto::OpDesc& fwd,
                         const std::string& grad_type,
                         const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs,
                         const std::vector<std::string>& out_grads,
                         const std::vector<std::string>& in_grads);

// The slot name under which a gradient travels: "X" -> "X@GRAD".
inline std::string GradSlot(const std::string& slot) {
  return GradVarName(slot);
}

// A grad maker of the common shape: the grad op takes every forward input
// and output plus Out@GRAD and yields a gradient for every input slot.
GradMakerFn DefaultGradMaker(const std::string& grad_type,
                             const std::vector<std::string>& inputs,
                             const std::vector<std::string>& outputs,
                             const std::vector<std::string>& out_grads,
                             const std::vector<std::string>& in_grads);

}  // namespace fluid
