// What stack's and unstack's CPU kernels (stack_op.cc) and CUDA kernels
// (stack_op.cu) share: the checked axis and the columns each piece owns
// (concat_split.h's view), defined once in stack_op.cc. Free of Eigen so
// that nvcc can compile the CUDA kernels that include it.
#pragma once

#include <cstddef>
#include <string>

#include "ops/concat_split.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// stack's `axis`, in [-(rank + 1), rank] of a piece's shape (a position in
// Y), as an index; an error naming X `name` otherwise.
int StackAxis(int axis, const Shape& piece, const std::string& name);

// The columns of piece i of n in the [rows, n * width] view of the whole,
// whose pieces have shape `piece` and are joined at `axis`.
PieceColumns StackPiece(const Shape& piece, int axis, size_t n, size_t i);

// The shape of unstack's pieces of X (`x_name`, `x`), checked: the axis
// attr in [-rank, rank) (set in *axis as an index), num equal to the
// number of outputs and to X's size along the axis.
Shape UnstackPiece(const std::string& x_name, const Shape& x, int axis_attr,
                   int num, size_t outs, int* axis);

}  // namespace ops
}  // namespace fluid
