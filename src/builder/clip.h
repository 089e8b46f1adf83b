// Gradient clipping as ops in the program (Fluid's GradientClipByValue,
// GradientClipByNorm, GradientClipByGlobalNorm). The ops rewrite gradients
// in place between the backward pass and the optimize ops and carry the
// optimize role, so that under the collective transpiler they read the
// averaged gradients (after their c_wait): the global norm is then the same
// on every rank. A sparse gradient (embedding(is_sparse=True)), its rows
// merged first (Optimizer::Minimize), goes through the same ops, which clip
// its values and count them in the norms: the dense gradient's clip, on the
// rows it touches.
#pragma once

#include <string>

#include "src/framework/backward.h"

namespace fluid {

class ProgramBuilder;

struct GradientClip {
  enum class Kind { kNone, kByValue, kByNorm, kByGlobalNorm };
  Kind kind = Kind::kNone;
  float min = 0.0f, max = 0.0f;         // kByValue
  float clip_norm = 0.0f;               // kByNorm, kByGlobalNorm
  std::string group = "default_group";  // kByGlobalNorm
};

// "by_value" | "by_norm" | "by_global_norm" | "none"; anything else is an
// error naming `where`.
GradientClip::Kind ParseGradientClipKind(const std::string& kind,
                                         const std::string& where);

// The clip of `param`: its own (ParamAttr, set_gradient_clip), else
// `fallback`.
const GradientClip& GradientClipOf(const ProgramBuilder& b,
                                   const std::string& param,
                                   const GradientClip& fallback);

// Appends the clipping of every (param, grad) pair whose parameter has a
// clip (the builder's per-parameter clip, else `fallback`): by value and by
// norm per gradient, by global norm once per group over all of its
// gradients, in `pairs` order.
void AppendGradientClips(ProgramBuilder* b, const ParamGradList& pairs,
                         const GradientClip& fallback);

}  // namespace fluid
