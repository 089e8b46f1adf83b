// What lookup_table's CPU kernels (lookup_table_op.cc) and CUDA kernels
// (lookup_table_op.cu) read and check on the host, defined once in
// lookup_table_op.cc. Free of Eigen so that nvcc can compile the CUDA
// kernels that include it.
#pragma once

#include <cstdint>
#include <vector>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// No padding row (the padding_idx attr's "none").
constexpr int64_t kNoPadding = -1;

// The table's geometry and the ids, which must be on the host here.
struct LookupArgs {
  int64_t height;      // rows of W
  int64_t width;       // elements per row of W
  int64_t padding;     // padding_idx, or kNoPadding
  const int64_t* ids;  // host memory
  int64_t num_ids;
};

// Reads W's geometry and padding_idx and checks every id (host copy `ids`)
// to lie in [0, height) or be the padding row: an error names the op, Ids,
// the offending id and its position.
LookupArgs CheckLookup(const ExecutionContext& ctx, const Tensor& host_ids);

// c_embedding's view of its ids (a vocabulary-parallel lookup: W holds
// rows [start, start + height) of a table of height x nranks rows, start
// being start_index, or the rank in ring ring_id times height when that is
// -1): `local` receives each id shifted into W's rows, or `height` (the
// returned args' padding row, which W does not have) for an id of another
// rank's rows or the padding id; every id must lie in the whole table.
LookupArgs LocalLookup(const ExecutionContext& ctx, const Tensor& host_ids,
                       std::vector<int64_t>* local);

// The positions of the ids that are not the padding row, and those ids
// (the rows a sparse gradient touches, in the order of Ids).
void KeptIds(const LookupArgs& a, std::vector<int64_t>* positions,
             std::vector<int64_t>* rows);

}  // namespace ops
}  // namespace fluid
