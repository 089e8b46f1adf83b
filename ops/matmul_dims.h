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
};

// Checks X and Y (-1 dims match anything) and returns the product's dims.
inline MatMulDims GetMatMulDims(const std::string& op,
                                const std::string& x_name, const Shape& x,
                                bool tx, const std::string& y_name,
                                const Shape& y, bool ty) {
  FLUID_ENFORCE(x.rank() == 2 || x.rank() == 3, op, ": X '", x_name,
                "' must be rank 2 or 3, its shape is ", x);
  FLUID_ENFORCE(y.rank() == 2 || y.rank() == 3, op, ": Y '", y_name,
                "' must be rank 2 or 3, its shape is ", y);
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
  d.x_batched = xr == 3;
  d.y_batched = yr == 3;
  if (d.x_batched && d.y_batched) {
    FLUID_ENFORCE(x[0] < 0 || y[0] < 0 || x[0] == y[0], op,
                  ": batch sizes differ: X '", x_name, "' ", x, ", Y '", y_name,
                  "' ", y);
    d.batch = x[0] >= 0 ? x[0] : y[0];
  } else if (d.x_batched) {
    d.batch = x[0];
  } else if (d.y_batched) {
    d.batch = y[0];
  }
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
