// norm: X divided by its L2 norm along one axis (Fluid's norm op, behind
// fluid.layers.l2_normalize):
//   Norm = sqrt(sum over the axis of X^2 + epsilon),  Out = X / Norm,
// Norm shaped like X with the axis' dim 1. The gradient reads X and Norm:
//   dX = dOut / Norm - X * sum over the axis of (dOut * X) / Norm^3.
#include "ops/norm_op.h"

#include <cmath>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

// The axis in [0, rank), from an attr in [-rank, rank).
int NormAxis(const std::string& op, const std::string& x_name, const Shape& x,
             int axis) {
  FLUID_ENFORCE(x.rank() >= 1, op, ": X '", x_name, "' must have rank >= 1");
  FLUID_ENFORCE(axis >= -x.rank() && axis < x.rank(), op, ": attr axis=", axis,
                " must be in [", -x.rank(), ", ", x.rank(), ") for X '", x_name,
                "' ", x);
  return axis < 0 ? axis + x.rank() : axis;
}

void NormInferShape(InferShapeContext* ctx) {
  Shape x = ctx->GetInputShape("X");
  const int axis =
      NormAxis("norm", ctx->InputName("X"), x, ctx->Attr<int32_t>("axis"));
  ctx->ShareShape("X", "Out");
  x[axis] = 1;
  ctx->SetOutputShape("Norm", x);
  ctx->SetOutputDtype("Norm", ctx->GetInputDtype("X"));
}

template <typename T>
void NormKernel(const ExecutionContext& ctx) {
  const NormDims d = ReadNormDims(ctx);
  const Tensor& x_t = ctx.Input("X");
  Shape ns = x_t.shape();
  ns[NormAxis("norm", "", ns, ctx.Attr<int32_t>("axis"))] = 1;
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  const T* x = x_t.data<T>();
  T* out = ctx.Output("Out")->mutable_data<T>(x_t.shape());
  T* norm = ctx.Output("Norm")->mutable_data<T>(ns);
  ParallelFor(ctx.device(), d.pre * d.post, 3.0 * d.n,
              [&](int64_t b, int64_t e) {
                for (int64_t j = b; j < e; ++j) {
                  const int64_t p = j / d.post, q = j % d.post;
                  const int64_t base = p * d.n * d.post + q;
                  T s = 0;
                  for (int64_t i = 0; i < d.n; ++i)
                    s += x[base + i * d.post] * x[base + i * d.post];
                  const T nv = std::sqrt(s + eps);
                  norm[j] = nv;
                  for (int64_t i = 0; i < d.n; ++i)
                    out[base + i * d.post] = x[base + i * d.post] / nv;
                }
              });
}

template <typename T>
void NormGradKernel(const ExecutionContext& ctx) {
  Tensor* dx_t = ctx.Output(GradSlot("X"));
  if (dx_t == nullptr) return;
  const NormDims d = ReadNormDims(ctx);
  const T* x = ctx.Input("X").data<T>();
  const T* norm = ctx.Input("Norm").data<T>();
  const T* dout = ctx.Input(GradSlot("Out")).data<T>();
  T* dx = dx_t->mutable_data<T>(ctx.Input("X").shape());
  ParallelFor(ctx.device(), d.pre * d.post, 4.0 * d.n,
              [&](int64_t b, int64_t e) {
                for (int64_t j = b; j < e; ++j) {
                  const int64_t p = j / d.post, q = j % d.post;
                  const int64_t base = p * d.n * d.post + q;
                  T s = 0;
                  for (int64_t i = 0; i < d.n; ++i)
                    s += x[base + i * d.post] * dout[base + i * d.post];
                  const T nv = norm[j], k = s / (nv * nv * nv);
                  for (int64_t i = 0; i < d.n; ++i) {
                    const int64_t at = base + i * d.post;
                    dx[at] = dout[at] / nv - x[at] * k;
                  }
                }
              });
}

}  // namespace

NormDims ReadNormDims(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Shape& s = x.shape();
  const int axis =
      NormAxis(ctx.type(), ctx.InputName("X"), s, ctx.Attr<int32_t>("axis"));
  NormDims d{s.Product(0, axis), s[axis], s.Product(axis + 1, s.rank())};
  if (ctx.type() == "norm_grad") {
    const Tensor& norm = ctx.Input("Norm");
    FLUID_ENFORCE(norm.numel() == d.pre * d.post, ctx.type(), ": Norm '",
                  ctx.InputName("Norm"), "' ", norm.shape(), " must hold ",
                  d.pre * d.post, " elements for X '", ctx.InputName("X"), "' ",
                  s, " and axis ", axis);
    const Tensor& dout = ctx.Input(GradSlot("Out"));
    FLUID_ENFORCE(dout.shape() == s, ctx.type(), ": Out@GRAD '",
                  ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                  " differs from X '", ctx.InputName("X"), "' ", s);
  }
  return d;
}

REGISTER_OP(norm)
    .Doc(
        "Out = X / Norm, Norm = sqrt(sum of X^2 along axis + epsilon), "
        "shaped like X with the axis' dim 1.")
    .Input("X", "any float tensor of rank >= 1")
    .Output("Out", "X's shape")
    .Output("Norm", "X's shape with dim axis 1")
    .Attr<int32_t>("axis", -1,
                   "the axis normalised; negative counts from the end")
    .InRange(-Shape::kMaxRank, Shape::kMaxRank - 1)
    .Attr<float>("epsilon", 1e-10f, "added to the sum of squares")
    .InRange(0, kNoUpperBound)
    .SetInferShape(NormInferShape)
    .SetGrad(GradSpec("norm_grad")
                 .Inputs({"X"})
                 .Outputs({"Norm"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(NormKernel<float>)
    .CPUKernel<double>(NormKernel<double>);

REGISTER_GRAD_OP(norm_grad)
    .Doc("dX = dOut / Norm - X * sum along axis of (dOut * X) / Norm^3.")
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->ShareShape("X", GradSlot("X"));
    })
    .CPUKernel<float>(NormGradKernel<float>)
    .CPUKernel<double>(NormGradKernel<double>);

}  // namespace ops
}  // namespace fluid
