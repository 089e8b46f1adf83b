// What merge_selected_rows' CPU kernel (merge_selected_rows_op.cc) and CUDA
// kernel (merge_selected_rows_op.cu) read and check on the host, defined
// once in merge_selected_rows_op.cc. Free of Eigen so that nvcc can compile
// the CUDA kernel that includes it.
#pragma once

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// X, checked: sparse rows, each within the height, one row of values per
// listed row.
const SelectedRows& MergeInput(const ExecutionContext& ctx);

// True when `rows` lists each row once, ascending: merged already.
bool RowsMerged(const std::vector<int64_t>& rows);

// Out = X (a copy, on the kernel's place) unless Out is X; for X merged
// already.
void PassMergedRows(const ExecutionContext& ctx, const SelectedRows& x);

// Out's rows and height set to `merge`'s and X's, and `values` (shaped
// [merge.size(), X's row dims...]) moved in as its values. Call it once X
// has been read: Out may be X.
void SetMergedRows(const ExecutionContext& ctx, const SelectedRows& x,
                   const RowMerge& merge, Tensor* values);

// The shape of the merged values: X's with merge.size() rows.
Shape MergedShape(const SelectedRows& x, const RowMerge& merge);

}  // namespace ops
}  // namespace fluid
