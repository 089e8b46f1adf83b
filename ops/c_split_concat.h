// What c_split and c_concat share (each is the other's gradient): the ring
// they run over, where a rank's block lies in the whole tensor, the grad op
// each makes of the other, and the kernels, written once over the piece
// copy of their place (CpuPieceCopy here, CudaPieceCopy in
// c_split_concat.cuh). The whole tensor is viewed as in concat_split.h:
// [rows, width] with rows = the product of the dims before the axis; rank
// r's block owns the r-th of nranks equal runs of columns.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ops/concat_split.h"
#include "src/framework/program_desc.h"

namespace fluid {
class Communicator;

namespace ops {

// Copies `c` (counted in elements of `elem` bytes) from `src` into its
// columns of the whole at `dst` (`to_whole`), or out of them into `dst`,
// on the kernel's place.
using PieceCopyFn = void (*)(const ExecutionContext& ctx, const PieceColumns& c,
                             const void* src, void* dst, bool to_whole,
                             size_t elem);

inline void CpuPieceCopy(const ExecutionContext&, const PieceColumns& c,
                         const void* src, void* dst, bool to_whole,
                         size_t elem) {
  const auto e = static_cast<int64_t>(elem);
  const PieceColumns bytes{c.rows, c.whole_width * e, c.offset * e,
                           c.width * e};
  CopyPieceColumns(bytes, static_cast<const char*>(src),
                   static_cast<char*>(dst), to_whole);
}

// The columns of rank `rank`'s block, `block` long on `axis`, in the
// [rows, width] view of `whole`.
inline PieceColumns RankColumns(const Shape& whole, int axis, int64_t block,
                                int rank) {
  const int64_t inner = whole.Product(axis + 1, whole.rank());
  return PieceColumns{whole.Product(0, axis), whole.Product(axis, whole.rank()),
                      rank * block * inner, block * inner};
}

// `whole` with dim `axis` divided by `nranks` (one rank's block); an
// unknown dim stays unknown, one that does not divide is an error naming
// `op`, `var` and the dims.
Shape SplitBlockShape(const Shape& whole, int axis, int nranks,
                      const std::string& op, const std::string& var);

// The ring the op runs over (its ring_id), checked to have `nranks`
// ranks; null for a ring of one rank run by an executor with no
// communicator (one process alone, as the gradient checker runs ops).
Communicator* RingOfSize(const ExecutionContext& ctx, int nranks);

// The gradient of c_split (a c_concat) or of c_concat (a c_split): `type`
// from Out@GRAD into X@GRAD, with the forward op's axis, ring and nranks.
std::vector<proto::OpDesc> SplitConcatGrad(const std::string& type,
                                           const proto::OpDesc& fwd);

// The kernels, over the piece copy of their place.
void RunSplit(const ExecutionContext& ctx, PieceCopyFn copy);
void RunConcat(const ExecutionContext& ctx, PieceCopyFn copy);

}  // namespace ops
}  // namespace fluid
