// Tensor layers over the reduction and data-movement ops: reduce_sum,
// reduce_mean, reduce_max, reduce_min, reduce_prod, squeeze, unsqueeze. Each
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

}  // namespace layers
}  // namespace fluid
