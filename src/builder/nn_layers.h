// Fluid 1.x's similarity, normalisation, activation and loss layers over the
// ops cos_sim, norm, prelu, smooth_l1_loss and group_norm; each is also
// registered by name (REGISTER_LAYER in nn_layers.cc) for the Python
// package.
#pragma once

#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

// The cosine similarity of each row of X [N, ...] with Y's row (Y of X's
// shape, or [1, ...] broadcast): [N, 1].
std::string CosSim(ProgramBuilder* b, const std::string& x,
                   const std::string& y);

// x divided by its L2 norm along `axis` (negative: from the end; 0 for a
// rank-1 x): sqrt(sum of x^2 + epsilon).
std::string L2Normalize(ProgramBuilder* b, const std::string& x, int axis,
                        float epsilon = 1e-12f, const std::string& name = "");

// x where x > 0, else alpha * x, alpha a parameter (0.25 at first): one
// ("all"), one per channel ("channel", [1, C, 1, ...]) or one per element
// of an example ("element", [1, dims 1..]).
std::string Prelu(ProgramBuilder* b, const std::string& x,
                  const std::string& mode, const ParamAttr& alpha = {},
                  const std::string& name = "");

// Per row of x [N, ...]: the sum of outside_weight * SmoothL1(inside_weight
// * (x - y)), [N, 1]; the weights are both given (one var each) or both
// empty.
std::string SmoothL1(ProgramBuilder* b, const std::string& x,
                     const std::string& y, const std::string& inside_weight,
                     const std::string& outside_weight, float sigma = 1.0f);

struct GroupNormOptions {
  int groups = 1;
  float epsilon = 1e-5f;
  bool scale = true;  // false: param_attr=False, no Scale
  bool shift = true;  // false: bias_attr=False, no Bias
  ParamAttr scale_attr;
  ParamAttr bias_attr;
  std::string act;
  std::string data_layout = "NCHW";
  std::string name;
};

// Group normalisation of input [N, C, ...] (NCHW) or [N, ..., C] (NHWC):
// each example's channels in `groups` groups, normalised over each group,
// times a [C] scale (1 at first), plus a [C] bias (0 at first), then act.
std::string GroupNorm(ProgramBuilder* b, const std::string& input,
                      const GroupNormOptions& options);

}  // namespace layers
}  // namespace fluid
