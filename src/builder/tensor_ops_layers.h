// Tensor layers over the reduction and data-movement ops: reduce_sum,
// reduce_mean, reduce_max, reduce_min, reduce_prod, squeeze, unsqueeze,
// stack, unstack, expand, gather, slice and shape. Each
// appends its op through a ProgramBuilder and returns its output var; each is
// also registered by name in tensor_ops_layers.cc with Fluid 1.x's argument
// names and defaults. `name`, when not empty, prefixes the output var's
// name.
#pragma once

#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

// The reduction `type` (reduce_sum, reduce_mean, reduce_max, reduce_min,
// reduce_prod) of `input` over `dim` (negative counts from the end); an
// empty `dim`, or one naming every dim, reduces every dim (to shape [1]
// without keep_dim).
std::string Reduce(ProgramBuilder* b, const std::string& type,
                   const std::string& input, const std::vector<int64_t>& dim,
                   bool keep_dim, const std::string& name = "");
// `input` without its dims of size 1 at `axes` (every dim of size 1 when
// empty; a named dim of another size stays), by op squeeze2.
std::string Squeeze(ProgramBuilder* b, const std::string& input,
                    const std::vector<int64_t>& axes,
                    const std::string& name = "");
// `input` with dims of size 1 inserted at `axes`, one after another, by op
// unsqueeze2.
std::string Unsqueeze(ProgramBuilder* b, const std::string& input,
                      const std::vector<int64_t>& axes,
                      const std::string& name = "");

// The inputs (one shape and dtype) joined along a new dim at `axis`.
std::string Stack(ProgramBuilder* b, const std::vector<std::string>& x,
                  int axis);
// `x` cut into its slices along `axis`, that dim removed; `num` (-1: X's
// size there, which must be known) slices.
std::vector<std::string> Unstack(ProgramBuilder* b, const std::string& x,
                                 int axis, int64_t num);
// `x` tiled expand_times[d] times along each dim d.
std::string Expand(ProgramBuilder* b, const std::string& x,
                   const std::vector<int64_t>& expand_times,
                   const std::string& name = "");
// Rows of `input` picked along dim 0 by the int32/int64 `index`.
std::string Gather(ProgramBuilder* b, const std::string& input,
                   const std::string& index, bool overwrite);
// input[starts[k]:ends[k]] along each dim axes[k] (Fluid's clamping).
std::string Slice(ProgramBuilder* b, const std::string& input,
                  const std::vector<int64_t>& axes,
                  const std::vector<int64_t>& starts,
                  const std::vector<int64_t>& ends);
// `input`'s shape as an int32 tensor [rank] (no gradient).
std::string ShapeOf(ProgramBuilder* b, const std::string& input);

}  // namespace layers
}  // namespace fluid
