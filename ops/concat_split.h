// What concat and split (and their gradients, each the other's forward)
// share, CPU and CUDA kernels alike: a tensor cut along one axis into
// pieces. Viewed as [rows, width] with rows = the product of the dims before
// the axis, the whole and every piece have the same rows, and piece i owns
// the columns [offset_i, offset_i + width_i) of the whole. Free of Eigen so
// that nvcc can compile the CUDA kernels that include it.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// `axis` in [-rank, rank) as an index in [0, rank); an error naming `op` and
// `var` otherwise.
inline int NormalizeAxis(int axis, int rank, const std::string& op,
                         const std::string& var) {
  FLUID_ENFORCE(axis >= -rank && axis < rank, op, ": axis ", axis,
                " is out of range for '", var, "' of rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

// The columns one piece owns in the [rows, width] view of the whole.
struct PieceColumns {
  int64_t rows;
  int64_t whole_width;
  int64_t offset;
  int64_t width;
};

// Calls copy(i, columns) for every piece, in order (also the empty ones,
// whose outputs must still be allocated).
// `shape_of(i)` is the shape of piece i (for a gradient, that of the
// forward piece, whether or not the gradient is wanted).
template <typename ShapeFn, typename CopyFn>
void ForEachPiece(const Shape& whole, int axis, size_t pieces, ShapeFn shape_of,
                  CopyFn copy) {
  const int64_t inner = whole.Product(axis + 1, whole.rank());
  PieceColumns c{whole.Product(0, axis), whole.Product(axis, whole.rank()), 0,
                 0};
  for (size_t i = 0; i < pieces; ++i) {
    c.width = shape_of(i)[axis] * inner;
    copy(i, c);
    c.offset += c.width;
  }
}

// The CPU copy of one piece: into its columns of the whole (`to_whole`), or
// out of them.
template <typename T>
void CopyPieceColumns(const PieceColumns& c, const T* src, T* dst,
                      bool to_whole) {
  if (c.width == 0) return;
  const size_t bytes = static_cast<size_t>(c.width) * sizeof(T);
  for (int64_t r = 0; r < c.rows; ++r) {
    const int64_t whole_at = r * c.whole_width + c.offset;
    const int64_t piece_at = r * c.width;
    if (to_whole) {
      std::memcpy(dst + whole_at, src + piece_at, bytes);
    } else {
      std::memcpy(dst + piece_at, src + whole_at, bytes);
    }
  }
}

// The axis attr of a concat or split op, normalised against `var` (the
// whole tensor's shape and name).
inline int AxisAttr(const ExecutionContext& ctx, const Shape& shape,
                    const std::string& var) {
  return NormalizeAxis(ctx.Attr<int32_t>("axis"), shape.rank(), ctx.type(),
                       var);
}

}  // namespace ops
}  // namespace fluid
