// Layers whose training and inference differ: batch_norm and dropout. Both
// ops carry an is_test attr that CloneForTest sets for evaluation.
#pragma once

#include <string>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

// Fluid's batch_norm arguments (the layer registration's names).
struct BatchNormOptions {
  std::string act;
  bool is_test = false;
  float momentum = 0.9f;
  float epsilon = 1e-5f;
  ParamAttr scale;  // param_attr: initialised to 1
  ParamAttr bias;   // bias_attr: initialised to 0
  std::string data_layout = "NCHW";
  std::string name;  // "" : batch_norm_<k>
  std::string moving_mean_name;
  std::string moving_variance_name;
  bool fuse_with_relu = false;  // relu in the batch_norm op itself
  bool use_global_stats = false;
  bool sync_stats = false;
};

// Per-channel batch normalisation of [N, C] or NCHW `input`, then `act`.
// Scale and bias are parameters; the moving mean (0) and variance (1) are
// persistable, not trainable, vars the op updates in place, saved with the
// parameters in checkpoints.
std::string BatchNorm(ProgramBuilder* b, const std::string& input,
                      const BatchNormOptions& options = {});

// Zeroes elements of `x` with probability `dropout_prob` in training (see
// ops/dropout_op.cc). Adds a persistable int64 step counter, so each run
// draws a new mask; `seed` 0 derives the seed from the output's name.
std::string Dropout(ProgramBuilder* b, const std::string& x, float dropout_prob,
                    bool is_test = false, int seed = 0,
                    const std::string& name = "",
                    const std::string& implementation = "downgrade_in_infer");

}  // namespace layers
}  // namespace fluid
