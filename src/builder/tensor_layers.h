// Tensor layers: joining, cutting and rearranging tensors (concat, split,
// transpose, flatten), thin layers over the product and sum ops (sums,
// matmul, mul), conversions and selections (cast, assign, one_hot, argmax,
// topk) and two losses (square_error_cost,
// sigmoid_cross_entropy_with_logits). Each appends its ops through a
// ProgramBuilder and returns its output var(s); each is also registered by
// name in tensor_layers.cc. `name`, when not empty, prefixes the output
// var's name.
#pragma once

#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

// The inputs joined along `axis` (negative counts from the end).
std::string Concat(ProgramBuilder* b, const std::vector<std::string>& input,
                   int axis, const std::string& name = "");
// `input` cut along `dim` into pieces of the given sizes (one may be -1).
std::vector<std::string> Split(ProgramBuilder* b, const std::string& input,
                               const std::vector<int64_t>& sections, int dim,
                               const std::string& name = "");
// Output dim i is x's dim perm[i].
std::string Transpose(ProgramBuilder* b, const std::string& x,
                      const std::vector<int64_t>& perm,
                      const std::string& name = "");
// A reshape of x to [prod(dims[:axis]), prod(dims[axis:])].
std::string Flatten(ProgramBuilder* b, const std::string& x, int axis,
                    const std::string& name = "");
// The elementwise sum of the inputs, into `out` (an existing var) when
// given.
std::string Sums(ProgramBuilder* b, const std::vector<std::string>& input,
                 const std::string& out = "");
std::string Matmul(ProgramBuilder* b, const std::string& x,
                   const std::string& y, bool transpose_x, bool transpose_y,
                   float alpha, const std::string& name = "");
std::string Mul(ProgramBuilder* b, const std::string& x, const std::string& y,
                int x_num_col_dims, int y_num_col_dims,
                const std::string& name = "");
std::string Cast(ProgramBuilder* b, const std::string& x, DataType dtype);
// A copy of input, into `output` (an existing var) when given.
std::string Assign(ProgramBuilder* b, const std::string& input,
                   const std::string& output = "");
// A constant of `shape` and `dtype` (float32, int32 or int64), its values
// given as decimal text separated by spaces, into `output` (an existing
// var) when given.
std::string AssignValue(ProgramBuilder* b, const std::string& values,
                        const std::vector<int64_t>& shape, DataType dtype,
                        const std::string& output = "");
// float32 one-hot rows [..., depth] of int64 ids [..., 1].
std::string OneHot(ProgramBuilder* b, const std::string& input, int64_t depth);
// int64 index of the largest element along `axis`, that dim removed.
std::string ArgMax(ProgramBuilder* b, const std::string& x, int64_t axis);
// The k largest values of each row and their int64 indices, in that order.
std::vector<std::string> TopK(ProgramBuilder* b, const std::string& input,
                              int64_t k, const std::string& name = "");
// (input - label)^2, elementwise.
std::string SquareErrorCost(ProgramBuilder* b, const std::string& input,
                            const std::string& label);
std::string SigmoidCrossEntropyWithLogits(ProgramBuilder* b,
                                          const std::string& x,
                                          const std::string& label,
                                          int ignore_index = -100,
                                          const std::string& name = "",
                                          bool normalize = false);

}  // namespace layers
}  // namespace fluid
