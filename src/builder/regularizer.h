// Weight decay as ops in the program (Fluid's L1Decay / L2Decay): after the
// backward pass and before the optimize op, the gradient of a parameter
// becomes grad + coeff * param (L2) or grad + coeff * sign(param) (L1).
// A sparse gradient (embedding(is_sparse=True)), its rows merged first
// (Optimizer::Minimize), gets the decay of the rows it touches only, as in
// Fluid: one sparse_weight_decay op. The ops carry the optimize role, so
// that under the collective transpiler they run after the gradient's
// c_wait, on the averaged gradient (the reduced rows).
#pragma once

#include <string>

#include "src/framework/backward.h"

namespace fluid {

class ProgramBuilder;

struct Regularization {
  enum class Kind { kNone, kL1, kL2 };
  Kind kind = Kind::kNone;
  float coeff = 0.0f;
};

// "l1" | "l2" | "none"; anything else is an error naming `where`.
Regularization::Kind ParseRegularizationKind(const std::string& kind,
                                             const std::string& where);

// The regularization of `param`: its ParamAttr's, else `fallback` (the
// optimizer's).
const Regularization& RegularizationOf(const ProgramBuilder& b,
                                       const std::string& param,
                                       const Regularization& fallback);

// Appends the decay of `param` into `grad` (in place); nothing for kNone.
// A sparse `grad` must list each row once when the ops run
// (merge_selected_rows).
void AppendRegularization(ProgramBuilder* b, const std::string& param,
                          const std::string& grad, const Regularization& r);

}  // namespace fluid
