// What an op's CPU test (tests/ops/<op>_op_test.cc) and its CUDA test
// (tests/gpu/<op>_op_cuda_test.cc) share: the case structs, how a case
// reads in a failure message, the op desc a case builds, and the case lists
// both run. One definition each, so that a case means the same on both
// places.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/framework/op_registry.h"
#include "src/framework/tensor.h"

namespace fluid {
namespace testing {

// ---- elementwise_add, elementwise_mul

// X and Y of a broadcasting binary op; axis -1 aligns Y with X's last dims.
struct BroadcastCase {
  Shape x, y;
  int axis;
};

// The ranges X and Y of an elementwise op are drawn from: where its math
// is smooth and well conditioned (Y away from 0 for div, X > 0 for pow).
struct OperandRanges {
  double x_lo = -1, x_hi = 1;
  double y_lo = -1, y_hi = 1;
};

// Every layout of the broadcast ([pre, n, post] with each part 1 or not),
// axis given and defaulted, Y with trailing 1s.
const std::vector<BroadcastCase>& BroadcastCases();

// Y's flat index for each element of X, straight from the broadcast rule:
// X's multi-index restricted to dims [axis, axis + rank(Y without trailing
// 1s)).
std::vector<int64_t> BroadcastIndex(const Shape& x, const Shape& y, int axis);

// `type` (elementwise_add, elementwise_mul) of x and y into `out`.
proto::OpDesc ElementwiseOp(const std::string& type, int axis,
                            const std::string& out = "out");

// ---- matmul

// [m, k] x [k, n]; xb/yb: the batch of X/Y, 0 for a plain matrix.
struct MatMulCase {
  int64_t xb, yb, m, k, n;
};

// The stored shape of an operand holding `batch` (0: none) [rows, cols]
// matrices, [.., cols, rows] when `transposed`.
Shape StoredShape(int64_t batch, int64_t rows, int64_t cols, bool transposed);

proto::OpDesc MatMulOp(bool tx, bool ty, float alpha = 1.0f);

// ---- conv2d

// Input [n, c, h, w], filter [m, c / groups, kh, kw].
struct ConvCase {
  int n, c, h, w, m, kh, kw;
  int stride_h, stride_w, pad_h, pad_w, dil_h = 1, dil_w = 1;
  int groups = 1;
};

std::string Describe(const ConvCase& k);

// The filter shape of a case: [m, c / groups, kh, kw].
Shape FilterShape(const ConvCase& k);

// conv2d of Input `x` and Filter `w` into "y", with the case's strides,
// paddings, dilations and groups.
proto::OpDesc Conv2dOp(const ConvCase& k, const std::string& x = "x",
                       const std::string& w = "w");

// ---- pool2d

// Input [n, c, h, w], window kh x kw.
struct PoolCase {
  int n, c, h, w, kh, kw, stride_h, stride_w, pad_h, pad_w;
};

std::string Describe(const PoolCase& k);

// pool2d ("max" or "avg") of `x` into "y".
proto::OpDesc Pool2dOp(const PoolCase& k, const std::string& type,
                       bool exclusive = true, const std::string& x = "x",
                       bool global = false);

// ---- labels: cross_entropy, softmax_with_cross_entropy, accuracy

// An int64 label tensor [n, 1].
Tensor Labels(const std::vector<int64_t>& v);

// Labels (i * 7 + 2) % classes, with every `every`-th row (if > 0) set to
// `ignore`.
std::vector<int64_t> SomeLabels(int64_t rows, int64_t classes, int every = 0,
                                int64_t ignore = -100);

// cross_entropy of probabilities "x" into "y".
proto::OpDesc CrossEntropyOp(const std::string& label = "label",
                             int ignore_index = -100);

// softmax_with_cross_entropy of "logits" into "softmax" and "loss".
proto::OpDesc SoftmaxCeOp(const std::string& label = "label",
                          int ignore_index = -100);

// accuracy of "scores" into "acc", and (when `counts`) "correct", "total".
proto::OpDesc AccuracyOp(const std::string& label = "label",
                         bool counts = true);

}  // namespace testing
}  // namespace fluid
