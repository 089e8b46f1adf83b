// The shape logic of matmul, shared by its CPU kernels (matmul_op.cc) and
// CUDA kernels (matmul_op.cu): which operand is batched and the product's
// M, K, N. Free of Eigen so that nvcc can compile it.
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

}  // namespace ops
}  // namespace fluid
