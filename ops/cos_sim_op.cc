// cos_sim: the cosine similarity of each row of X with the same row of Y
// (or with Y's one row, broadcast):
//   Out[r] = X[r] . Y[r] / (|X[r]| |Y[r]|),  XNorm[r] = |X[r]|,
//   YNorm = |Y[r]| per row of Y,
// X and Y viewed as [rows, cols] (every dim after the first folded into
// cols). As in Fluid there is no epsilon: a row of zeros gives NaN. The
// gradient (CosSimGrad in cos_sim_op.h) reads the saved norms and Out:
//   dX[r] = dOut[r] (Y[r] / (|X[r]| |Y[r]|) - Out[r] X[r] / |X[r]|^2),
// dY alike with X and Y swapped, summed over the rows for a broadcast Y.
#include "ops/cos_sim_op.h"

#include <cmath>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

// Checks X's and Y's shapes (unknown dims, -1, pass) and returns Y's rows.
int64_t CheckCosSimShapes(const std::string& op, const std::string& x_name,
                          const Shape& x, const std::string& y_name,
                          const Shape& y) {
  FLUID_ENFORCE(x.rank() >= 2, op, ": X '", x_name, "' ", x,
                " must have rank >= 2 ([rows, ...])");
  FLUID_ENFORCE(y.rank() == x.rank(), op, ": Y '", y_name, "' ", y,
                " must have the rank of X '", x_name, "' ", x);
  for (int i = 1; i < x.rank(); ++i) {
    FLUID_ENFORCE(x[i] < 0 || y[i] < 0 || x[i] == y[i], op, ": Y '", y_name,
                  "' ", y, " must match X '", x_name, "' ", x,
                  " in every dim after the first (dim ", i, ")");
  }
  FLUID_ENFORCE(y[0] < 0 || x[0] < 0 || y[0] == x[0] || y[0] == 1, op, ": Y '",
                y_name, "' ", y, " must have X's rows (", x[0], ", X '", x_name,
                "') or 1 row");
  return y[0];
}

void CosSimInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  const Shape y = ctx->GetInputShape("Y");
  const int64_t y_rows = CheckCosSimShapes("cos_sim", ctx->InputName("X"), x,
                                           ctx->InputName("Y"), y);
  const DataType dt = ctx->GetInputDtype("X");
  FLUID_ENFORCE(ctx->GetInputDtype("Y") == dt, "cos_sim: Y '",
                ctx->InputName("Y"), "' is ",
                DataTypeName(ctx->GetInputDtype("Y")), " but X '",
                ctx->InputName("X"), "' is ", DataTypeName(dt));
  ctx->SetOutputShape("Out", Shape({x[0], 1}));
  ctx->SetOutputDtype("Out", dt);
  ctx->SetOutputShape("XNorm", Shape({x[0], 1}));
  ctx->SetOutputDtype("XNorm", dt);
  ctx->SetOutputShape("YNorm", Shape({y_rows, 1}));
  ctx->SetOutputDtype("YNorm", dt);
  ctx->ShareLoD("X", "Out");
}

template <typename T>
void CosSimKernel(const ExecutionContext& ctx) {
  const CosSimDims d = ReadCosSimDims(ctx);
  const T* x = ctx.Input("X").data<T>();
  const T* y = ctx.Input("Y").data<T>();
  T* out = ctx.Output("Out")->mutable_data<T>(Shape({d.rows, 1}));
  T* xn = ctx.Output("XNorm")->mutable_data<T>(Shape({d.rows, 1}));
  const int64_t y_rows = d.y_broadcast ? 1 : d.rows;
  T* yn = ctx.Output("YNorm")->mutable_data<T>(Shape({y_rows, 1}));
  auto norm = [&](const T* v) {
    T s = 0;
    for (int64_t c = 0; c < d.cols; ++c) s += v[c] * v[c];
    return std::sqrt(s);
  };
  for (int64_t r = 0; r < y_rows; ++r) yn[r] = norm(y + r * d.cols);
  ParallelFor(ctx.device(), d.rows, 3.0 * d.cols, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * d.cols;
      const int64_t ry = d.y_broadcast ? 0 : r;
      const T* yr = y + ry * d.cols;
      T dot = 0;
      for (int64_t c = 0; c < d.cols; ++c) dot += xr[c] * yr[c];
      xn[r] = norm(xr);
      out[r] = dot / (xn[r] * yn[ry]);
    }
  });
}

// dX and, for a Y with X's rows, dY: one row at a time.
template <typename T>
void CosSimRowGrads(const ExecutionContext& ctx, const CosSimDims& d) {
  const T* x = ctx.Input("X").data<T>();
  const T* y = ctx.Input("Y").data<T>();
  const T* out = ctx.Input("Out").data<T>();
  const T* xn = ctx.Input("XNorm").data<T>();
  const T* yn = ctx.Input("YNorm").data<T>();
  const T* dout = ctx.Input(GradSlot("Out")).data<T>();
  Tensor* dx_t = ctx.Output(GradSlot("X"));
  Tensor* dy_t = d.y_broadcast ? nullptr : ctx.Output(GradSlot("Y"));
  T* dx = dx_t ? dx_t->mutable_data<T>(ctx.Input("X").shape()) : nullptr;
  T* dy = dy_t ? dy_t->mutable_data<T>(ctx.Input("Y").shape()) : nullptr;
  ParallelFor(ctx.device(), d.rows, 4.0 * d.cols, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t ry = d.y_broadcast ? 0 : r;
      for (int64_t c = 0; c < d.cols; ++c) {
        const T xv = x[r * d.cols + c], yv = y[ry * d.cols + c];
        if (dx)
          dx[r * d.cols + c] =
              CosSimGrad(xv, yv, out[r], xn[r], yn[ry], dout[r]);
        if (dy)
          dy[r * d.cols + c] =
              CosSimGrad(yv, xv, out[r], yn[ry], xn[r], dout[r]);
      }
    }
  });
}

template <typename T>
void CosSimGradKernel(const ExecutionContext& ctx) {
  const CosSimDims d = ReadCosSimDims(ctx);
  CosSimRowGrads<T>(ctx, d);
  Tensor* dy_t = ctx.Output(GradSlot("Y"));
  if (!d.y_broadcast || dy_t == nullptr) return;
  // A broadcast Y: its gradient sums every row's.
  const T* x = ctx.Input("X").data<T>();
  const T* y = ctx.Input("Y").data<T>();
  const T* out = ctx.Input("Out").data<T>();
  const T* xn = ctx.Input("XNorm").data<T>();
  const T yn = ctx.Input("YNorm").data<T>()[0];
  const T* dout = ctx.Input(GradSlot("Out")).data<T>();
  T* dy = dy_t->mutable_data<T>(ctx.Input("Y").shape());
  ParallelFor(ctx.device(), d.cols, 4.0 * d.rows, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      T s = 0;
      for (int64_t r = 0; r < d.rows; ++r)
        s += CosSimGrad(y[c], x[r * d.cols + c], out[r], yn, xn[r], dout[r]);
      dy[c] = s;
    }
  });
}

void CosSimGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", GradSlot("X"));
  ctx->ShareShape("Y", GradSlot("Y"));
}

}  // namespace

CosSimDims ReadCosSimDims(const ExecutionContext& ctx) {
  const Shape x = ctx.Input("X").shape();
  const Shape y = ctx.Input("Y").shape();
  const int64_t y_rows = CheckCosSimShapes(ctx.type(), ctx.InputName("X"), x,
                                           ctx.InputName("Y"), y);
  CosSimDims d;
  d.rows = x[0];
  d.cols = x.Product(1, x.rank());
  d.y_broadcast = y_rows == 1 && x[0] != 1;
  if (ctx.type() == "cos_sim_grad") {
    const Shape dout = ctx.Input(GradSlot("Out")).shape();
    FLUID_ENFORCE(dout.numel() == d.rows, ctx.type(), ": Out@GRAD '",
                  ctx.InputName(GradSlot("Out")), "' ", dout, " must hold ",
                  d.rows, " elements, one per row of X '", ctx.InputName("X"),
                  "' ", x);
  }
  return d;
}

REGISTER_OP(cos_sim)
    .Doc(
        "Out = the cosine similarity of each row of X with the same row of "
        "Y, or with Y's one row; XNorm and YNorm the rows' L2 norms.")
    .Input("X", "[rows, ...], rank >= 2")
    .Input("Y", "X's shape, or 1 row broadcast to every row of X")
    .Output("Out", "[rows, 1]")
    .Output("XNorm", "[rows, 1], |X[r]|")
    .Output("YNorm", "[rows of Y, 1], |Y[r]|")
    .SetInferShape(CosSimInferShape)
    .SetGrad(GradSpec("cos_sim_grad")
                 .Inputs({"X", "Y"})
                 .Outputs({"Out", "XNorm", "YNorm"})
                 .OutGrads({"Out"})
                 .InGrads({"X", "Y"}))
    .CPUKernel<float>(CosSimKernel<float>)
    .CPUKernel<double>(CosSimKernel<double>);

REGISTER_GRAD_OP(cos_sim_grad)
    .Doc(
        "dX = dOut (Y / (|X| |Y|) - Out X / |X|^2) per row; dY alike, "
        "summed over the rows for a broadcast Y.")
    .SetInferShape(CosSimGradInferShape)
    .CPUKernel<float>(CosSimGradKernel<float>)
    .CPUKernel<double>(CosSimGradKernel<double>);

}  // namespace ops
}  // namespace fluid
