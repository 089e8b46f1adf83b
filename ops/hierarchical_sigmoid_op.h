// What hierarchical_sigmoid's CPU kernels (hierarchical_sigmoid_op.cc) and
// CUDA kernels (hierarchical_sigmoid_op.cu) share: each row's path through
// the tree, read and checked on the host (defined in the .cc file), and the
// per-node loss and gradient. Free of Eigen so that nvcc can compile the
// CUDA kernels that include it.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// The path of every row of X: `length` entries per row (the longest path
// the tree allows), node[p] the row of W (and Bias) at step p of the path
// and bit[p] its code (0 or 1); node[p] = -1 past the path's end.
struct HsigmoidPaths {
  int64_t rows = 0;
  int64_t length = 0;
  int64_t dim = 0;    // the width of X and W
  int64_t nodes = 0;  // the rows of W
  std::vector<int64_t> node;
  std::vector<int64_t> bit;
};

// The default tree's longest path for `num_classes` leaves: the position
// of the highest set bit of num_classes - 1.
int64_t HsigmoidCodeLength(int64_t num_classes);

// Reads the paths from host copies of Label (default tree) or PathTable
// and PathCode (custom tree, both non-null), checking every label, node
// and code the paths use; an error names the op, the input, the value and
// its position.
HsigmoidPaths ReadHsigmoidPaths(const ExecutionContext& ctx,
                                const Tensor& label, const Tensor* table,
                                const Tensor* code);

// log(1 + exp(z)) without overflow or loss of precision.
template <typename T>
FLUID_HOSTDEVICE T HsigmoidSoftplus(T z) {
  return (z > T(0) ? z : T(0)) + log1p(exp(-fabs(z)));
}

// The binary cross-entropy of logit z against code bit: softplus(z) -
// bit * z, given softplus(z) (what PreOut holds).
template <typename T>
FLUID_HOSTDEVICE T HsigmoidNodeLoss(T softplus, T z, int64_t bit) {
  return bit != 0 ? softplus - z : softplus;
}

// d(loss)/dz = sigmoid(z) - bit, from softplus(z) = PreOut:
// sigmoid(z) = 1 - exp(-softplus(z)).
template <typename T>
FLUID_HOSTDEVICE T HsigmoidNodeGrad(T softplus, int64_t bit) {
  return -expm1(-softplus) - (bit != 0 ? T(1) : T(0));
}

}  // namespace ops
}  // namespace fluid
