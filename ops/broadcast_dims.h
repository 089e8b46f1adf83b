// The shape logic of Paddle-style broadcasting for the elementwise binary ops
// (see elementwise_op_function.h): checking that Y lines up with X at `axis`
// and splitting X into [pre, n, post], and what their gradient kernels read.
// Free of Eigen so that the CUDA kernels share it with the CPU ones.
#pragma once

#include <string>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// X viewed as [pre, n, post]; Y as [n]. A size is -1 when some dim it
// multiplies is unknown (compile time only).
struct BroadcastDims {
  int64_t pre = 1;
  int64_t n = 1;
  int64_t post = 1;
  bool same_shape() const { return pre == 1 && post == 1; }
};

// Checks that Y broadcasts onto X at `axis` and returns the [pre, n, post]
// split. Unknown (-1) dims on either side match anything. Errors name the op,
// both vars and their shapes.
inline BroadcastDims GetBroadcastDims(const std::string& op,
                                      const std::string& x_name, const Shape& x,
                                      const std::string& y_name, const Shape& y,
                                      int axis) {
  FLUID_ENFORCE(y.rank() <= x.rank(), op, ": Y '", y_name, "' ", y,
                " has more dims than X '", x_name, "' ", x,
                "; Y must broadcast onto X");
  if (axis == -1) axis = x.rank() - y.rank();
  int y_rank = y.rank();
  while (y_rank > 0 && y[y_rank - 1] == 1) --y_rank;  // drop trailing 1s
  FLUID_ENFORCE(axis >= 0 && axis <= x.rank() - y_rank, op, ": axis ", axis,
                " out of range for X '", x_name, "' ", x, " and Y '", y_name,
                "' ", y);
  for (int i = 0; i < y_rank; ++i) {
    int64_t xd = x[axis + i], yd = y[i];
    FLUID_ENFORCE(xd < 0 || yd < 0 || xd == yd, op, ": Y '", y_name, "' ", y,
                  " does not match X '", x_name, "' ", x, " at axis ", axis,
                  " (X dim ", axis + i, " is ", xd, ", Y dim ", i, " is ", yd,
                  ")");
  }
  BroadcastDims d;
  d.pre = x.Product(0, axis);
  d.n = y.Product(0, y_rank);
  d.post = x.Product(axis + y_rank, x.rank());
  return d;
}

inline BroadcastDims GetBroadcastDims(const ExecutionContext& ctx,
                                      const Tensor& x, const Tensor& y) {
  return GetBroadcastDims(ctx.type(), ctx.InputName("X"), x.shape(),
                          ctx.InputName("Y"), y.shape(),
                          ctx.Attr<int32_t>("axis"));
}

// What the gradient kernels of the elementwise ops read: X, Y, Out@GRAD
// (checked to be shaped like X) and the broadcast split of X and Y.
struct ElementwiseGradArgs {
  const Tensor& x;
  const Tensor& y;
  const Tensor& dout;
  BroadcastDims dims;
};

// Defined in elementwise_add_op.cc.
ElementwiseGradArgs ReadElementwiseGradArgs(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
