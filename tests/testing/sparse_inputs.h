// Running one op whose inputs include sparse rows (SelectedRows vars), as
// the ops between the backward pass and the optimizer see a sparse
// gradient: merge_selected_rows, sparse_weight_decay, and the clips and
// norms that also take sparse rows (ops/sparse_values.h).
#pragma once

#include <map>
#include <string>

#include "tests/testing/sparse_rows.h"

namespace fluid {
namespace testing {

using SparseMap = std::map<std::string, SelectedRows>;

// One run of `op` on `place` with the tensors `dense` and the sparse rows
// `sparse` as its inputs (var name -> value; an output may be one of them,
// for an op in place). Returns every output: tensors by name, and the
// outputs holding sparse rows with their values in host memory.
SparseRunResult RunOpOnSparse(const proto::OpDesc& op, const TensorMap& dense,
                              const SparseMap& sparse,
                              const Place& place = Place::CPU());

// The message of the error that RunOpOnSparse throws, or "".
std::string SparseErrorOf(const proto::OpDesc& op, const TensorMap& dense,
                          const SparseMap& sparse);

// Rows `rows` of the dense `t` (a [height, ...] tensor), in that order, as
// a host tensor [rows.size(), ...].
Tensor GatherRows(const Tensor& t, const std::vector<int64_t>& rows);

}  // namespace testing
}  // namespace fluid
