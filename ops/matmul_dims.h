// The shape logic of matmul, shared by its CPU kernels (matmul_op.cc) and
// CUDA kernels (matmul_op.cu): which operand is batched, the product's M, K,
// N, and the products that give the gradients. Free of Eigen so that nvcc
// can compile it.
#pragma once

#include <string>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

struct MatMulDims {
  int64_t batch = 1;
  int64_t m = 0, k = 0, n = 0;
  bool x_batched = false;  // false: X is one matrix shared by the batch
  bool y_batched = false;
  Shape batch_dims;  // the output's dims before [M, N]; empty: not batched
};

// The dims of `s` before its last two (the batch dims of a matmul operand)
// and their product; -1 when any is unknown.
inline Shape MatMulBatchDims(const Shape& s) {
  Shape b;
  for (int i = 0; i + 2 < s.rank(); ++i) b.push_back(s[i]);
  return b;
}

inline int64_t MatMulBatchSize(const Shape& batch_dims) {
  int64_t n = 1;
  for (int i = 0; i < batch_dims.rank(); ++i) {
    if (batch_dims[i] < 0) return -1;
    n *= batch_dims[i];
  }
  return n;
}

// Checks that the batch dims of two batched operands agree (-1 matches
// anything) and returns them, known dims preferred.
inline Shape MatchMatMulBatch(const std::string& op, const std::string& x_name,
                              const Shape& x, const std::string& y_name,
                              const Shape& y) {
  const Shape xb = MatMulBatchDims(x), yb = MatMulBatchDims(y);
  FLUID_ENFORCE(xb.rank() == yb.rank(), op, ": batch dims differ: X '", x_name,
                "' ", x, ", Y '", y_name, "' ", y);
  Shape out;
  for (int i = 0; i < xb.rank(); ++i) {
    FLUID_ENFORCE(xb[i] < 0 || yb[i] < 0 || xb[i] == yb[i], op,
                  ": batch dims differ: X '", x_name, "' ", x, ", Y '", y_name,
                  "' ", y);
    out.push_back(xb[i] >= 0 ? xb[i] : yb[i]);
  }
  return out;
}

// Checks X and Y (-1 dims match anything) and returns the product's dims.
// The dims before the last two are batch dims: two batched operands must
// have the same ones; a rank-2 operand is shared by every matrix of the
// other's batch.
inline MatMulDims GetMatMulDims(const std::string& op,
                                const std::string& x_name, const Shape& x,
                                bool tx, const std::string& y_name,
                                const Shape& y, bool ty) {
  FLUID_ENFORCE(x.rank() >= 2, op, ": X '", x_name,
                "' must have rank 2 or more, its shape is ", x);
  FLUID_ENFORCE(y.rank() >= 2, op, ": Y '", y_name,
                "' must have rank 2 or more, its shape is ", y);
  const int xr = x.rank(), yr = y.rank();
  MatMulDims d;
  d.m = tx ? x[xr - 1] : x[xr - 2];
  int64_t xk = tx ? x[xr - 2] : x[xr - 1];
  int64_t yk = ty ? y[yr - 1] : y[yr - 2];
  d.n = ty ? y[yr - 2] : y[yr - 1];
  FLUID_ENFORCE(xk < 0 || yk < 0 || xk == yk, op, ": X '", x_name, "' ", x,
                " (transpose_X=", tx, ") has K=", xk, " but Y '", y_name, "' ",
                y, " (transpose_Y=", ty, ") has K=", yk);
  d.k = xk >= 0 ? xk : yk;
  d.x_batched = xr > 2;
  d.y_batched = yr > 2;
  if (d.x_batched && d.y_batched) {
    d.batch_dims = MatchMatMulBatch(op, x_name, x, y_name, y);
  } else if (d.x_batched) {
    d.batch_dims = MatMulBatchDims(x);
  } else if (d.y_batched) {
    d.batch_dims = MatMulBatchDims(y);
  }
  d.batch = MatMulBatchSize(d.batch_dims);
  return d;
}

inline MatMulDims GetMatMulDims(const ExecutionContext& ctx, const Tensor& x,
                                const Tensor& y) {
  return GetMatMulDims(ctx.type(), ctx.InputName("X"), x.shape(),
                       ctx.Attr<bool>("transpose_X"), ctx.InputName("Y"),
                       y.shape(), ctx.Attr<bool>("transpose_Y"));
}

// What the kernels of matmul and matmul_grad read: X, Y, the attrs and the
// product's dims. The functions below are defined in matmul_op.cc.
struct MatMulArgs {
  const Tensor& x;
  const Tensor& y;
  bool trans_x;
  bool trans_y;
  float alpha;
  MatMulDims dims;
  // Elements from one matrix of the batch to the next: 0 for an operand
  // the batch shares.
  int64_t x_stride;
  int64_t y_stride;
  int64_t out_stride;
};

MatMulArgs ReadMatMulArgs(const ExecutionContext& ctx);

// One product of matmul_grad over the batch: C = alpha * op(A) op(B), C
// [m, n], A and B among X, Y and Out@GRAD; strides as in MatMulArgs (C's
// is 0 when the gradient is of a shared operand: the products sum into it).
struct MatMulGradProduct {
  const Tensor* a;
  const Tensor* b;
  bool trans_a;
  bool trans_b;
  int64_t m, n, k;
  int64_t a_stride, b_stride, c_stride;
};

// matmul_grad's inputs, Out@GRAD checked against the product, and the
// products that give X@GRAD and Y@GRAD.
struct MatMulGradArgs {
  MatMulArgs fwd;
  const Tensor& dout;
  MatMulGradProduct dx;
  MatMulGradProduct dy;
};

MatMulGradArgs ReadMatMulGradArgs(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
