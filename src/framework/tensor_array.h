// A LoDTensorArray: the value of a variable of type LOD_TENSOR_ARRAY, a
// growable list of tensors (each with its own shape and LoD) indexed from 0.
// A Variable holds one like any other value (Variable::GetMutable).
// write_to_array grows it; a slot skipped over holds an uninitialised
// tensor, which read_from_array refuses.
#pragma once

#include <vector>

#include "src/framework/scope.h"

namespace fluid {

using LoDTensorArray = std::vector<Tensor>;

// The array `var` holds, made in place of nothing or of a tensor that never
// got memory (shape inference may have sized one). A var holding anything
// else is an error naming what it holds.
inline LoDTensorArray* MutableTensorArray(Variable* var) {
  if (var->HasValue() && var->IsTensor() && !var->GetTensor().initialized())
    *var = Variable();
  return var->GetMutable<LoDTensorArray>();
}

}  // namespace fluid
