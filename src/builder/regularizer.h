// Weight decay as ops in the program (Fluid's L1Decay / L2Decay): after the
// backward pass and before the optimize op, the gradient of a parameter
// becomes grad + coeff * param (L2) or grad + coeff * sign(param) (L1).
// The ops carry the optimize role, so that under the collective transpiler
// they run after the gradient's c_wait, on the averaged gradient.
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

// Appends the decay of `param` into `grad` (in place); nothing for kNone.
void AppendRegularization(ProgramBuilder* b, const std::string& param,
                          const std::string& grad, const Regularization& r);

}  // namespace fluid
