// smooth_l1_loss: per row of X [rows, ...] (Fluid's op behind
// fluid.layers.smooth_l1):
//   Diff = InsideWeight * (X - Y),
//   Out[r] = sum over the row of OutsideWeight * SmoothL1(Diff, sigma^2),
// SmoothL1 in smooth_l1_loss_op.h; the weights are given together or not at
// all, as in Fluid. With w = InsideWeight * OutsideWeight:
//   dX = dOut[r] * w * SmoothL1Grad(Diff),  dY = -dX.
#include "ops/smooth_l1_loss_op.h"

#include <string>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

void CheckLikeX(const std::string& op, const std::string& x_name,
                const Shape& x, const std::string& slot,
                const std::string& name, const Shape& s) {
  FLUID_ENFORCE(ShapesCompatible(x, s), op, ": ", slot, " '", name, "' ", s,
                " must have the shape of X '", x_name, "' ", x);
}

void SmoothL1InferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  const std::string& xn = ctx->InputName("X");
  FLUID_ENFORCE(x.rank() >= 2, "smooth_l1_loss: X '", xn, "' ", x,
                " must have rank >= 2 ([rows, ...])");
  const bool in = ctx->HasInput("InsideWeight");
  FLUID_ENFORCE(in == ctx->HasInput("OutsideWeight"),
                "smooth_l1_loss: InsideWeight and OutsideWeight are given "
                "together or not at all; only ",
                in ? "InsideWeight" : "OutsideWeight", " is given");
  const DataType dt = ctx->GetInputDtype("X");
  for (const char* slot : {"Y", "InsideWeight", "OutsideWeight"}) {
    if (!ctx->HasInput(slot)) continue;
    CheckLikeX("smooth_l1_loss", xn, x, slot, ctx->InputName(slot),
               ctx->GetInputShape(slot));
    FLUID_ENFORCE(ctx->GetInputDtype(slot) == dt, "smooth_l1_loss: ", slot,
                  " '", ctx->InputName(slot), "' is ",
                  DataTypeName(ctx->GetInputDtype(slot)), " but X '", xn,
                  "' is ", DataTypeName(dt));
  }
  ctx->ShareShape("X", "Diff");
  ctx->SetOutputShape("Out", Shape({x[0], 1}));
  ctx->SetOutputDtype("Out", dt);
}

template <typename T>
void SmoothL1Kernel(const ExecutionContext& ctx) {
  const SmoothL1Dims d = ReadSmoothL1Dims(ctx);
  const Tensor& x_t = ctx.Input("X");
  const T* x = x_t.data<T>();
  const T* y = ctx.Input("Y").data<T>();
  const T* iw = d.weighted ? ctx.Input("InsideWeight").data<T>() : nullptr;
  const T* ow = d.weighted ? ctx.Input("OutsideWeight").data<T>() : nullptr;
  const T s2 = static_cast<T>(ctx.Attr<float>("sigma")) *
               static_cast<T>(ctx.Attr<float>("sigma"));
  T* diff = ctx.Output("Diff")->mutable_data<T>(x_t.shape());
  T* out = ctx.Output("Out")->mutable_data<T>(Shape({d.rows, 1}));
  ParallelFor(ctx.device(), d.rows, 6.0 * d.cols, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      T sum = 0;
      for (int64_t i = r * d.cols; i < (r + 1) * d.cols; ++i) {
        diff[i] = iw ? iw[i] * (x[i] - y[i]) : x[i] - y[i];
        const T l = SmoothL1(diff[i], s2);
        sum += ow ? ow[i] * l : l;
      }
      out[r] = sum;
    }
  });
}

template <typename T>
void SmoothL1GradKernel(const ExecutionContext& ctx) {
  const SmoothL1Dims d = ReadSmoothL1Dims(ctx);
  const Tensor& diff_t = ctx.Input("Diff");
  const T* diff = diff_t.data<T>();
  const T* iw = d.weighted ? ctx.Input("InsideWeight").data<T>() : nullptr;
  const T* ow = d.weighted ? ctx.Input("OutsideWeight").data<T>() : nullptr;
  const T* dout = ctx.Input(GradSlot("Out")).data<T>();
  const T s2 = static_cast<T>(ctx.Attr<float>("sigma")) *
               static_cast<T>(ctx.Attr<float>("sigma"));
  Tensor* dx_t = ctx.Output(GradSlot("X"));
  Tensor* dy_t = ctx.Output(GradSlot("Y"));
  T* dx = dx_t ? dx_t->mutable_data<T>(diff_t.shape()) : nullptr;
  T* dy = dy_t ? dy_t->mutable_data<T>(diff_t.shape()) : nullptr;
  ParallelFor(ctx.device(), d.rows * d.cols, 4.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T g = dout[i / d.cols] * SmoothL1Grad(diff[i], s2);
      if (iw) g *= iw[i] * ow[i];
      if (dx) dx[i] = g;
      if (dy) dy[i] = -g;
    }
  });
}

}  // namespace

SmoothL1Dims ReadSmoothL1Dims(const ExecutionContext& ctx) {
  const bool grad = ctx.type() == "smooth_l1_loss_grad";
  // The gradient reads Diff, shaped like X, in X's place.
  const std::string xs = grad ? "Diff" : "X";
  const Shape& x = ctx.Input(xs).shape();
  const std::string& xn = ctx.InputName(xs);
  FLUID_ENFORCE(x.rank() >= 2, ctx.type(), ": ", xs, " '", xn, "' ", x,
                " must have rank >= 2 ([rows, ...])");
  SmoothL1Dims d{x[0], x.Product(1, x.rank()),
                 ctx.HasInput("InsideWeight") && ctx.HasInput("OutsideWeight")};
  for (const char* slot : {"Y", "InsideWeight", "OutsideWeight"}) {
    if (!ctx.HasInput(slot)) continue;
    FLUID_ENFORCE(ctx.Input(slot).shape() == x, ctx.type(), ": ", slot, " '",
                  ctx.InputName(slot), "' ", ctx.Input(slot).shape(),
                  " must have the shape of ", xs, " '", xn, "' ", x);
  }
  if (grad) {
    const Shape& dout = ctx.Input(GradSlot("Out")).shape();
    FLUID_ENFORCE(dout.numel() == d.rows, ctx.type(), ": Out@GRAD '",
                  ctx.InputName(GradSlot("Out")), "' ", dout, " must hold ",
                  d.rows, " values, one per row of ", xs, " '", xn, "' ", x);
  }
  return d;
}

REGISTER_OP(smooth_l1_loss)
    .Doc(
        "Out[r] = sum over row r of OutsideWeight * SmoothL1(Diff), Diff = "
        "InsideWeight * (X - Y); SmoothL1(d) = 0.5 sigma^2 d^2 where |d| < "
        "1 / sigma^2, else |d| - 0.5 / sigma^2.")
    .Input("X", "[rows, ...], rank >= 2")
    .Input("Y", "X's shape")
    .OptionalInput("InsideWeight", "X's shape; with OutsideWeight")
    .OptionalInput("OutsideWeight", "X's shape; with InsideWeight")
    .Output("Diff", "InsideWeight * (X - Y), X's shape")
    .Output("Out", "[rows, 1], the loss of each row")
    .Attr<float>("sigma", 1.0f, "the loss is quadratic for |d| < 1 / sigma^2")
    .InRange(1e-30, kNoUpperBound)
    .SetInferShape(SmoothL1InferShape)
    .SetGrad(GradSpec("smooth_l1_loss_grad")
                 .Inputs({"InsideWeight", "OutsideWeight"})
                 .Outputs({"Diff"})
                 .OutGrads({"Out"})
                 .InGrads({"X", "Y"}))
    .CPUKernel<float>(SmoothL1Kernel<float>)
    .CPUKernel<double>(SmoothL1Kernel<double>);

REGISTER_GRAD_OP(smooth_l1_loss_grad)
    .Doc(
        "dX = dOut[r] * InsideWeight * OutsideWeight * SmoothL1'(Diff); "
        "dY = -dX.")
    .KernelDtypeFrom("Diff")
    .SetInferShape([](InferShapeContext* ctx) {
      for (const char* slot : {"X", "Y"}) {
        const std::string g = GradSlot(slot);
        if (!ctx->HasOutput(g)) continue;
        ctx->SetOutputShape(g, ctx->GetInputShape("Diff"));
        ctx->SetOutputDtype(g, ctx->GetInputDtype("Diff"));
      }
    })
    .CPUKernel<float>(SmoothL1GradKernel<float>)
    .CPUKernel<double>(SmoothL1GradKernel<double>);

}  // namespace ops
}  // namespace fluid
