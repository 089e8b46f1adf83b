// layer_norm: each row of X's [rows, cols] view (cols the product of the
// dims from begin_norm_axis on) normalised to zero mean and unit variance,
// then scaled and shifted per column:
//   Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias,
// var the biased variance of the row. Mean and Variance ([rows]) are saved
// for the gradient. With xhat = (X - mean) * rstd and g = dY * Scale:
//   dX = rstd * (g - mean(g) - xhat * mean(g * xhat))   (means over the row)
//   dScale = sum over rows of dY * xhat,  dBias = sum over rows of dY.
#include "ops/layer_norm_op.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/grad_checks.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

// The [rows, cols] view of `x` split at `axis`; -1 for a product holding an
// unknown dim.
LayerNormDims SplitAt(const std::string& op, const std::string& x_name,
                      const Shape& x, int axis) {
  FLUID_ENFORCE(axis >= 0 && axis < x.rank(), op,
                ": attr begin_norm_axis=", axis, " must be in [0, ", x.rank(),
                ") for X '", x_name, "' ", x);
  auto product = [&x](int b, int e) {
    int64_t p = 1;
    for (int i = b; i < e; ++i) {
      if (x[i] < 0) return int64_t{-1};
      p *= x[i];
    }
    return p;
  };
  return {product(0, axis), product(axis, x.rank())};
}

// A Scale or Bias input, absent or holding `cols` elements.
const Tensor* ReadParam(const ExecutionContext& ctx, const std::string& slot,
                        int64_t cols) {
  if (!ctx.HasInput(slot)) return nullptr;
  const Tensor& t = ctx.Input(slot);
  FLUID_ENFORCE(t.numel() == cols, ctx.type(), ": ", slot, " '",
                ctx.InputName(slot), "' ", t.shape(), " must hold ", cols,
                " elements (the normalised dims of X '", ctx.InputName("X"),
                "' ", ctx.Input("X").shape(), ")");
  return &t;
}

}  // namespace

LayerNormArgs ReadLayerNormArgs(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const LayerNormDims d = SplitAt(ctx.type(), ctx.InputName("X"), x.shape(),
                                  ctx.Attr<int32_t>("begin_norm_axis"));
  return {x, ReadParam(ctx, "Scale", d.cols), ReadParam(ctx, "Bias", d.cols), d,
          ctx.Attr<float>("epsilon")};
}

LayerNormGradArgs ReadLayerNormGradArgs(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const LayerNormDims d = SplitAt(ctx.type(), ctx.InputName("X"), x.shape(),
                                  ctx.Attr<int32_t>("begin_norm_axis"));
  const Tensor& mean = ctx.Input("Mean");
  const Tensor& var = ctx.Input("Variance");
  const Tensor& dy = ctx.Input(GradSlot("Y"));
  FLUID_ENFORCE(mean.numel() == d.rows && var.numel() == d.rows, ctx.type(),
                ": Mean '", ctx.InputName("Mean"), "' ", mean.shape(),
                " and Variance '", ctx.InputName("Variance"), "' ", var.shape(),
                " must hold ", d.rows, " elements for X '", ctx.InputName("X"),
                "' ", x.shape());
  FLUID_ENFORCE(dy.shape() == x.shape(), ctx.type(), ": Y@GRAD '",
                ctx.InputName(GradSlot("Y")), "' ", dy.shape(),
                " differs from X '", ctx.InputName("X"), "' ", x.shape());
  return {x, ReadParam(ctx, "Scale", d.cols), mean, var, dy,
          d, ctx.Attr<float>("epsilon")};
}

namespace {

template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

void LayerNormInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  const LayerNormDims d = SplitAt("layer_norm", ctx->InputName("X"), x,
                                  ctx->Attr<int32_t>("begin_norm_axis"));
  for (const char* slot : {"Scale", "Bias"}) {
    if (!ctx->HasInput(slot) || d.cols < 0) continue;
    const Shape p = ctx->GetInputShape(slot);
    FLUID_ENFORCE(
        p.Product(0, p.rank()) == d.cols || p.Product(0, p.rank()) < 0,
        "layer_norm: ", slot, " '", ctx->InputName(slot), "' ", p,
        " must hold ", d.cols, " elements (the normalised dims of X '",
        ctx->InputName("X"), "' ", x, ")");
  }
  ctx->ShareShape("X", "Y");
  for (const char* slot : {"Mean", "Variance"}) {
    ctx->SetOutputShape(slot, Shape({d.rows}));
    ctx->SetOutputDtype(slot, ctx->GetInputDtype("X"));
  }
}

template <typename T>
void LayerNormKernel(const ExecutionContext& ctx) {
  const LayerNormArgs a = ReadLayerNormArgs(ctx);
  const int64_t d = a.dims.cols;
  const T* xp = a.x.data<T>();
  const T* sp = a.scale ? a.scale->data<T>() : nullptr;
  const T* bp = a.bias ? a.bias->data<T>() : nullptr;
  T* yp = ctx.Output("Y")->mutable_data<T>();
  T* mp = ctx.Output("Mean")->mutable_data<T>();
  T* vp = ctx.Output("Variance")->mutable_data<T>();
  const T eps = static_cast<T>(a.epsilon);
  ParallelFor(ctx.device(), a.dims.rows, 6.0 * static_cast<double>(d),
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) {
                  ConstArrayMap<T> x(xp + r * d, d);
                  ArrayMap<T> y(yp + r * d, d);
                  const T mean = x.sum() / static_cast<T>(d);
                  const T var = (x - mean).square().sum() / static_cast<T>(d);
                  const T rstd = static_cast<T>(1) / std::sqrt(var + eps);
                  y = (x - mean) * rstd;
                  if (sp) y *= ConstArrayMap<T>(sp, d);
                  if (bp) y += ConstArrayMap<T>(bp, d);
                  mp[r] = mean;
                  vp[r] = var;
                }
              });
}

// Scale@GRAD is shaped like Scale; Bias@GRAD (the grad op does not read
// Bias) is [cols].
void LayerNormGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", GradSlot("X"));
  if (ctx->HasInput("Scale")) ctx->ShareShape("Scale", GradSlot("Scale"));
  if (ctx->HasOutput(GradSlot("Bias"))) {
    const LayerNormDims d =
        SplitAt(ctx->op_type(), ctx->InputName("X"), ctx->GetInputShape("X"),
                ctx->Attr<int32_t>("begin_norm_axis"));
    ctx->SetOutputShape(GradSlot("Bias"), Shape({d.cols}));
    ctx->SetOutputDtype(GradSlot("Bias"), ctx->GetInputDtype("X"));
  }
}

// dX row by row (the rows in parallel).
template <typename T>
void LayerNormInputGrad(const CPUDeviceContext& dev, const LayerNormGradArgs& a,
                        T* dxp) {
  const int64_t d = a.dims.cols;
  const T* xp = a.x.data<T>();
  const T* gp = a.dy.data<T>();
  const T* sp = a.scale ? a.scale->data<T>() : nullptr;
  const T* mp = a.mean.data<T>();
  const T* vp = a.variance.data<T>();
  const T eps = static_cast<T>(a.epsilon), inv_d = T(1) / static_cast<T>(d);
  ParallelFor(dev, a.dims.rows, 10.0 * static_cast<double>(d),
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) {
                  const T rstd = T(1) / std::sqrt(vp[r] + eps);
                  ConstArrayMap<T> x(xp + r * d, d), dy(gp + r * d, d);
                  ArrayMap<T> dx(dxp + r * d, d);
                  // dx holds g = dY * Scale, then the result.
                  dx = dy;
                  if (sp) dx *= ConstArrayMap<T>(sp, d);
                  const auto xhat = (x - mp[r]) * rstd;
                  const T g_mean = dx.sum() * inv_d;
                  const T gx_mean = (dx * xhat).sum() * inv_d;
                  dx = rstd * (dx - g_mean - xhat * gx_mean);
                }
              });
}

// dScale and dBias (either may be null): column sums over the rows, in row
// order, the columns in parallel.
template <typename T>
void LayerNormParamGrads(const CPUDeviceContext& dev,
                         const LayerNormGradArgs& a, T* dsp, T* dbp) {
  const int64_t rows = a.dims.rows, d = a.dims.cols;
  const T* xp = a.x.data<T>();
  const T* gp = a.dy.data<T>();
  const T* mp = a.mean.data<T>();
  const T* vp = a.variance.data<T>();
  const T eps = static_cast<T>(a.epsilon);
  ParallelFor(
      dev, d, 4.0 * static_cast<double>(rows), [&](int64_t b, int64_t e) {
        const int64_t n = e - b;
        if (dsp) ArrayMap<T>(dsp + b, n).setZero();
        if (dbp) ArrayMap<T>(dbp + b, n).setZero();
        for (int64_t r = 0; r < rows; ++r) {
          ConstArrayMap<T> dy(gp + r * d + b, n);
          if (dbp) ArrayMap<T>(dbp + b, n) += dy;
          if (!dsp) continue;
          const T rstd = T(1) / std::sqrt(vp[r] + eps);
          ArrayMap<T>(dsp + b, n) +=
              dy * ((ConstArrayMap<T>(xp + r * d + b, n) - mp[r]) * rstd);
        }
      });
}

template <typename T>
void LayerNormGradKernel(const ExecutionContext& ctx) {
  const LayerNormGradArgs a = ReadLayerNormGradArgs(ctx);
  if (Tensor* dx = ctx.Output(GradSlot("X"))) {
    LayerNormInputGrad<T>(ctx.device(), a, dx->mutable_data<T>());
  }
  Tensor* ds = ctx.Output(GradSlot("Scale"));
  Tensor* db = ctx.Output(GradSlot("Bias"));
  T* dsp = ds ? ds->mutable_data<T>() : nullptr;
  T* dbp = db ? db->mutable_data<T>() : nullptr;
  if (dsp || dbp) LayerNormParamGrads<T>(ctx.device(), a, dsp, dbp);
}

}  // namespace

REGISTER_OP(layer_norm)
    .Doc(
        "Normalises each row of X's [rows, cols] view (cols: the dims from "
        "begin_norm_axis on) to zero mean and unit variance, then "
        "Y = xhat * Scale + Bias.")
    .Input("X", "input, [d0, ..., dn]")
    .OptionalInput("Scale", "[cols] per-column scale; absent: 1")
    .OptionalInput("Bias", "[cols] per-column shift; absent: 0")
    .Output("Y", "normalised X, same shape")
    .Output("Mean", "[rows] the mean of each row")
    .Output("Variance", "[rows] the biased variance of each row")
    .Attr<float>("epsilon", 1e-5f, "added to the variance")
    .InRange(0, kNoUpperBound)
    .Attr<int32_t>("begin_norm_axis", 1,
                   "the first normalised dim; the dims before it are rows")
    .SetInferShape(LayerNormInferShape)
    .SetGrad(GradSpec("layer_norm_grad")
                 .Inputs({"X", "Scale"})
                 .Outputs({"Mean", "Variance"})
                 .OutGrads({"Y"})
                 .InGrads({"X", "Scale", "Bias"}))
    .CPUKernel<float>(LayerNormKernel<float>)
    .CPUKernel<double>(LayerNormKernel<double>);

REGISTER_GRAD_OP(layer_norm_grad)
    .Doc("Gradients of layer_norm with respect to X, Scale and Bias.")
    .SetInferShape(LayerNormGradInferShape)
    .CPUKernel<float>(LayerNormGradKernel<float>)
    .CPUKernel<double>(LayerNormGradKernel<double>);

}  // namespace ops
}  // namespace fluid
