// The layers of attention and the transformer: layer_norm, gelu,
// fill_constant_batch_size_like (Fluid's names) and causal_attention_mask.
// Attention itself is composed from matmul, softmax, reshape and transpose
// (Python's fluid.nets.scaled_dot_product_attention).
#pragma once

#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

struct LayerNormOptions {
  bool scale = true;  // with a [cols] scale parameter (initialised to 1)
  bool shift = true;  // with a [cols] bias parameter (initialised to 0)
  int begin_norm_axis = 1;
  float epsilon = 1e-5f;
  ParamAttr scale_attr;
  ParamAttr bias_attr;
  std::string act;
  std::string name;  // "" : layer_norm_<k>
};

// Normalises each row of input's [rows, cols] view (cols: the dims from
// begin_norm_axis on) to zero mean and unit variance, then scales, shifts
// and applies `act`. Parameters <layer>.w_0 (scale) and <layer>.b_0.
std::string LayerNorm(ProgramBuilder* b, const std::string& input,
                      const LayerNormOptions& o);

// The constant [seq_len, seq_len] additive mask of causal self-attention:
// 0 on and below the diagonal, `masked_value` above (float32 values, cast
// to `dtype`). No gradient flows to it.
std::string CausalAttentionMask(ProgramBuilder* b, int64_t seq_len,
                                DataType dtype, float masked_value = -1e9f);

// A constant of `shape` and `dtype` filled with `value`, its dim
// output_dim_idx taken at run time from input's dim input_dim_idx (a
// batch-sized constant: a mask or an initial state). No gradient flows to
// it.
std::string FillConstantBatchSizeLike(ProgramBuilder* b,
                                      const std::string& input,
                                      const std::vector<int64_t>& shape,
                                      DataType dtype, float value,
                                      int input_dim_idx = 0,
                                      int output_dim_idx = 0);

// x * Phi(x), exactly (erf) or by the tanh approximation.
std::string Gelu(ProgramBuilder* b, const std::string& x, bool approximate,
                 const std::string& name = "");

}  // namespace layers
}  // namespace fluid
