// Inputs an op reads the shape of, never the values (Fluid's "no need
// buffer" variables): elementwise_add_grad needs X's and Y's shapes to
// reduce Out@GRAD to them, not X itself, which is an fc layer's product
// before the bias. The liveness (src/framework/liveness.h) ends a var's
// life at its last use that reads its values; the executor then frees its
// memory but keeps its dtype, shape and LoD, which a shape-only reader
// after it still finds.
//
//   REGISTER_SHAPE_ONLY_INPUTS(elementwise_add_grad, "X", "Y");
#pragma once

#include <initializer_list>
#include <string>

namespace fluid {

bool RegisterShapeOnlyInputs(const std::string& op_type,
                             std::initializer_list<const char*> slots);

// Whether op `op_type` reads only the shape of its input `slot`.
bool IsShapeOnlyInput(const std::string& op_type, const std::string& slot);

}  // namespace fluid

#define REGISTER_SHAPE_ONLY_INPUTS(type, ...)            \
  [[maybe_unused]] static bool fluid_shape_only_##type = \
      ::fluid::RegisterShapeOnlyInputs(#type, {__VA_ARGS__})
