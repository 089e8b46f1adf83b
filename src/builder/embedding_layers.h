// The typed builder of the embedding layer (registered by name in
// embedding_layers.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

struct EmbeddingOptions {
  bool is_sparse = false;
  // Accepted for Fluid programs; every rank holds the whole table.
  bool is_distributed = false;
  // The id whose rows read as zeros and get no gradient: -1 none, else in
  // [0, vocabulary).
  int64_t padding_idx = -1;
  DataType dtype = DataType::kFloat32;
};

// Fluid's fluid.layers.embedding: a lookup_table of the int64 ids `input`
// ([N, 1] or [..., 1]) into a table [size[0], size[1]] (Xavier-uniform by
// default, as Fluid); returns [..., size[1]]. With is_sparse the table's
// gradient is sparse rows (one per id) instead of a dense [V, D] tensor.
std::string Embedding(ProgramBuilder* b, const std::string& input,
                      const std::vector<int64_t>& size,
                      const EmbeddingOptions& options = {},
                      const ParamAttr& param_attr = {});

}  // namespace layers
}  // namespace fluid
