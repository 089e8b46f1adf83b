// Inputs an op reads the shape of, never the values (Fluid's "no need
// buffer" variables): elementwise_add_grad needs X's and Y's shapes to
// reduce Out@GRAD to them, not X itself, which is an fc layer's product
// before the bias. The liveness (src/framework/liveness.h) ends a var's
// life at its last use that reads its values; the executor then frees its
// memory but keeps its dtype, shape and LoD, which a shape-only reader
// after it still finds.
//
//   REGISTER_SHAPE_ONLY_INPUTS(elementwise_add_grad, "X", "Y");
//
// Some ops read an input for its shape only when they write no output of
// a slot: dropout without Out (a recompute replay that draws a mask alone)
// reads X's shape, not X.
//
//   REGISTER_SHAPE_ONLY_INPUT_WITHOUT(dropout, "X", "Out");
#pragma once

#include <initializer_list>
#include <string>

namespace fluid {

namespace proto {
class OpDesc;
}

bool RegisterShapeOnlyInputs(const std::string& op_type,
                             std::initializer_list<const char*> slots);

bool RegisterShapeOnlyInputWithout(const std::string& op_type, const char* slot,
                                   const char* output);

// Whether op `op_type` reads only the shape of its input `slot`, whatever
// it writes.
bool IsShapeOnlyInput(const std::string& op_type, const std::string& slot);

// The output slot whose absence makes `slot` of `op_type` a shape-only
// input; null if none.
const char* ShapeOnlyInputWithout(const std::string& op_type,
                                  const std::string& slot);

// Whether an op of type `op_type` reads only the shape of its input
// `slot`; `writes(output_slot)` says whether the op writes that output.
template <typename Writes>
bool ReadsShapeOnly(const std::string& op_type, const std::string& slot,
                    Writes writes) {
  if (IsShapeOnlyInput(op_type, slot)) return true;
  const char* output = ShapeOnlyInputWithout(op_type, slot);
  return output != nullptr && !writes(output);
}

// The same for an op of a program: it writes an output when it names it.
bool ReadsShapeOnly(const proto::OpDesc& op, const std::string& slot);

}  // namespace fluid

#define REGISTER_SHAPE_ONLY_INPUTS(type, ...)            \
  [[maybe_unused]] static bool fluid_shape_only_##type = \
      ::fluid::RegisterShapeOnlyInputs(#type, {__VA_ARGS__})

#define REGISTER_SHAPE_ONLY_INPUT_WITHOUT(type, slot, output)    \
  [[maybe_unused]] static bool fluid_shape_only_without_##type = \
      ::fluid::RegisterShapeOnlyInputWithout(#type, slot, output)
