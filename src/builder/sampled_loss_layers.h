// The sampled and tree-structured losses of word2vec-style models, with
// Fluid 1.x's names and arguments: nce (noise-contrastive estimation over
// num_total_classes) and hsigmoid (the hierarchical sigmoid over a binary
// tree of the classes). Both create their weight and bias parameters and
// take is_sparse: the gradients of those tables are then sparse rows.
#pragma once

#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

struct NceOptions {
  std::string sample_weight;  // var [N] or [N, 1]; "" for none
  ParamAttr param_attr;
  bool has_bias = true;  // false: Fluid's bias_attr=False
  ParamAttr bias_attr;
  int64_t num_neg_samples = 10;
  std::string name;
  std::string sampler = "uniform";  // or "log_uniform", "custom_dist"
  std::vector<double> custom_dist;  // P over the classes, for custom_dist
  int64_t seed = 0;
  bool is_sparse = false;
};

// The nce cost of each row of `input` [N, D] against its int64 `label`
// [N, num_true], divided by num_neg_samples + 1 as Fluid's layer returns
// it ([N, 1]); creates the weight [num_total_classes, D] and the bias
// [num_total_classes, 1], and the step counter the draws follow.
std::string Nce(ProgramBuilder* b, const std::string& input,
                const std::string& label, int64_t num_total_classes,
                const NceOptions& options = {});

struct HsigmoidOptions {
  ParamAttr param_attr;
  bool has_bias = true;
  ParamAttr bias_attr;
  std::string name;
  std::string path_table;  // int64 [N, L] vars, with is_custom
  std::string path_code;
  bool is_custom = false;
  bool is_sparse = false;
};

// The hierarchical sigmoid loss of each row of `input` [N, D], [N, 1]:
// the default tree over num_classes leaves (weight [num_classes - 1, D]),
// or with is_custom the paths in path_table and path_code (weight
// [num_classes, D], num_classes counting the tree's inner nodes).
std::string Hsigmoid(ProgramBuilder* b, const std::string& input,
                     const std::string& label, int64_t num_classes,
                     const HsigmoidOptions& options = {});

}  // namespace layers
}  // namespace fluid
