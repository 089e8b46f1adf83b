// Layers that declare variables rather than compute (registered in
// var_layers.cc as create_parameter, create_global_var and create_tensor).
#pragma once

#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

// A trainable parameter of `shape` and `dtype`, initialised in the startup
// program. Named attr.name, else `name`, else create_parameter_N.w_0
// (.b_0 when `is_bias`); initialised by attr's initializer, else
// `fallback`'s (when it has one), else zeros for a bias and Xavier
// (uniform) for a weight.
std::string CreateParameter(ProgramBuilder* b,
                            const std::vector<int64_t>& shape, DataType dtype,
                            const std::string& name = "",
                            const ParamAttr& attr = {}, bool is_bias = false,
                            const ParamAttr& fallback = {});

// A var of `shape` and `dtype` filled with `value`, named `name` or
// global_var_N.tmp_0. Persistable: declared in both programs and filled once
// by the startup program, so it lives (and is saved) across runs. Otherwise
// a var of the main program that a fill_constant op there refills on every
// run.
std::string CreateGlobalVar(ProgramBuilder* b,
                            const std::vector<int64_t>& shape, float value,
                            DataType dtype, bool persistable = false,
                            const std::string& name = "");

// A var of `dtype` with no value yet, for a later op to write (accuracy's
// `total`, assign's `output`), named `name` or create_tensor_N. Its shape
// is the writer's. `persistable` is refused: a var kept across runs needs
// a starting value (CreateGlobalVar).
std::string CreateTensor(ProgramBuilder* b, DataType dtype,
                         const std::string& name = "",
                         bool persistable = false);

}  // namespace layers
}  // namespace fluid
