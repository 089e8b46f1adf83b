// The typed builders of the training-knob layers (registered by name in
// clip_layers.cc).
#pragma once

#include <string>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

// min(max(x, min), max) elementwise (Fluid's fluid.layers.clip); the
// gradient is 0 outside (min, max). min > max is an error.
std::string Clip(ProgramBuilder* b, const std::string& x, float min, float max,
                 const std::string& name = "");

}  // namespace layers
}  // namespace fluid
