// layer_norm: each row of X's [rows, cols] view (cols the product of the
// dims from begin_norm_axis on) normalised to zero mean and unit variance,
// then scaled and shifted per column:
//   Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias,
// var the biased variance of the row. Mean and Variance ([rows]) are saved
// for the gradient. With xhat = (X - mean) * rstd and g = dY * Scale:
//   dX = rstd * (g - mean(g) - xhat * mean(g * xhat))   (means over the row)
//   dScale = sum over rows of dY * xhat,  dBias = sum over rows of dY.
// A bfloat16 or float16 X (Y, and their gradients) comes with float32
// Scale, Bias, Mean and Variance (and gradients): each row is computed in
// float and rounded once; the column sums of the parameter gradients
// accumulate in float.
#include "ops/layer_norm_op.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/grad_checks.h"
#include "ops/half_cpu.h"
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

// Scale's, Bias's and the statistics' dtype for X of `x`: X's own, or
// float32 for a 16-bit X.
DataType ParamDtype(DataType x) {
  return IsHalfDtype(x) ? DataType::kFloat32 : x;
}

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
  // Scale, Bias and the statistics are X's dtype, or float32 for a 16-bit
  // X (the kernel computes in float32 and keeps them so).
  const DataType param_dtype = ParamDtype(ctx->GetInputDtype("X"));
  for (const char* slot : {"Scale", "Bias"}) {
    if (!ctx->HasInput(slot)) continue;
    FLUID_ENFORCE(ctx->GetInputDtype(slot) == param_dtype, "layer_norm: ", slot,
                  " '", ctx->InputName(slot), "' is ",
                  DataTypeName(ctx->GetInputDtype(slot)), " but must be ",
                  DataTypeName(param_dtype), " for X '", ctx->InputName("X"),
                  "' of ", DataTypeName(ctx->GetInputDtype("X")));
  }
  ctx->ShareShape("X", "Y");
  for (const char* slot : {"Mean", "Variance"}) {
    ctx->SetOutputShape(slot, Shape({d.rows}));
    ctx->SetOutputDtype(slot, param_dtype);
  }
}

// Row r of the forward pass on compute-type values: y = the normalised x
// (times Scale, plus Bias, where given); the row's mean and variance.
template <typename C>
void NormaliseRow(const C* xp, C* yp, const C* sp, const C* bp, int64_t d,
                  C eps, C* mean_out, C* var_out) {
  ConstArrayMap<C> x(xp, d);
  ArrayMap<C> y(yp, d);
  const C mean = x.sum() / static_cast<C>(d);
  const C var = (x - mean).square().sum() / static_cast<C>(d);
  const C rstd = static_cast<C>(1) / std::sqrt(var + eps);
  y = (x - mean) * rstd;
  if (sp) y *= ConstArrayMap<C>(sp, d);
  if (bp) y += ConstArrayMap<C>(bp, d);
  *mean_out = mean;
  *var_out = var;
}

// layer_norm of 16-bit X (float32 Scale, Bias, Mean, Variance): each row
// copied to float, normalised by NormaliseRow, rounded once.
template <typename T>
void HalfLayerNormKernel(const ExecutionContext& ctx) {
  const LayerNormArgs a = ReadLayerNormArgs(ctx);
  const int64_t d = a.dims.cols;
  const T* xp = a.x.data<T>();
  const float* sp = a.scale ? a.scale->data<float>() : nullptr;
  const float* bp = a.bias ? a.bias->data<float>() : nullptr;
  T* yp = ctx.Output("Y")->mutable_data<T>();
  float* mp = ctx.Output("Mean")->mutable_data<float>();
  float* vp = ctx.Output("Variance")->mutable_data<float>();
  ParallelFor(ctx.device(), a.dims.rows, 6.0 * static_cast<double>(d),
              [&](int64_t b, int64_t e) {
                float* x = ThreadRow(0, d);
                float* y = ThreadRow(1, d);
                for (int64_t r = b; r < e; ++r) {
                  ToFloats(xp + r * d, x, d);
                  NormaliseRow(x, y, sp, bp, d, a.epsilon, mp + r, vp + r);
                  FromFloats(y, yp + r * d, d);
                }
              });
}

template <typename T>
void FloatLayerNormKernel(const ExecutionContext& ctx) {
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
                for (int64_t r = b; r < e; ++r)
                  NormaliseRow(xp + r * d, yp + r * d, sp, bp, d, eps, mp + r,
                               vp + r);
              });
}

template <typename T>
void LayerNormKernel(const ExecutionContext& ctx) {
  if constexpr (IsHalfType<T>::value) {
    HalfLayerNormKernel<T>(ctx);
  } else {
    FloatLayerNormKernel<T>(ctx);
  }
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
    ctx->SetOutputDtype(GradSlot("Bias"), ParamDtype(ctx->GetInputDtype("X")));
  }
}

// dX of one row from its x and dY, the row's mean and 1 / std.
template <typename C>
void InputGradRow(const C* xp, const C* gp, const C* sp, C mean, C rstd,
                  C inv_d, int64_t d, C* dxp) {
  ConstArrayMap<C> x(xp, d), dy(gp, d);
  ArrayMap<C> dx(dxp, d);
  // dx holds g = dY * Scale, then the result.
  dx = dy;
  if (sp) dx *= ConstArrayMap<C>(sp, d);
  const auto xhat = (x - mean) * rstd;
  const C g_mean = dx.sum() * inv_d;
  const C gx_mean = (dx * xhat).sum() * inv_d;
  dx = rstd * (dx - g_mean - xhat * gx_mean);
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
                for (int64_t r = b; r < e; ++r)
                  InputGradRow(xp + r * d, gp + r * d, sp, mp[r],
                               T(1) / std::sqrt(vp[r] + eps), inv_d, d,
                               dxp + r * d);
              });
}

// dX of 16-bit X, dY (float32 Scale, Mean, Variance): each row copied to
// float, InputGradRow, rounded once.
template <typename T>
void HalfLayerNormInputGrad(const CPUDeviceContext& dev,
                            const LayerNormGradArgs& a, T* dxp) {
  const int64_t d = a.dims.cols;
  const T* xp = a.x.data<T>();
  const T* gp = a.dy.data<T>();
  const float* sp = a.scale ? a.scale->data<float>() : nullptr;
  const float* mp = a.mean.data<float>();
  const float* vp = a.variance.data<float>();
  const float inv_d = 1.0f / static_cast<float>(d);
  ParallelFor(dev, a.dims.rows, 10.0 * static_cast<double>(d),
              [&](int64_t b, int64_t e) {
                float* x = ThreadRow(0, d);
                float* dy = ThreadRow(1, d);
                float* dx = ThreadRow(2, d);
                for (int64_t r = b; r < e; ++r) {
                  ToFloats(xp + r * d, x, d);
                  ToFloats(gp + r * d, dy, d);
                  InputGradRow(x, dy, sp, mp[r],
                               1.0f / std::sqrt(vp[r] + a.epsilon), inv_d, d,
                               dx);
                  FromFloats(dx, dxp + r * d, d);
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

// dScale and dBias (float32; either may be null) of 16-bit X and dY: float
// column sums over the rows, in row order, the columns in parallel; each
// row's run of the thread's columns widened into float rows first, so that
// the sums vectorise.
template <typename T>
void HalfLayerNormParamGrads(const CPUDeviceContext& dev,
                             const LayerNormGradArgs& a, float* dsp,
                             float* dbp) {
  const int64_t rows = a.dims.rows, d = a.dims.cols;
  const T* xp = a.x.data<T>();
  const T* gp = a.dy.data<T>();
  const float* mp = a.mean.data<float>();
  const float* vp = a.variance.data<float>();
  ParallelFor(dev, d, 4.0 * static_cast<double>(rows),
              [&](int64_t b, int64_t e) {
                const int64_t n = e - b;
                float* g = ThreadRow(0, n);
                float* x = ThreadRow(1, n);
                if (dsp) ArrayMap<float>(dsp + b, n).setZero();
                if (dbp) ArrayMap<float>(dbp + b, n).setZero();
                for (int64_t r = 0; r < rows; ++r) {
                  ToFloats(gp + r * d + b, g, n);
                  ConstArrayMap<float> gv(g, n);
                  if (dbp) ArrayMap<float>(dbp + b, n) += gv;
                  if (!dsp) continue;
                  ToFloats(xp + r * d + b, x, n);
                  const float rstd = 1.0f / std::sqrt(vp[r] + a.epsilon);
                  ArrayMap<float>(dsp + b, n) +=
                      gv * ((ConstArrayMap<float>(x, n) - mp[r]) * rstd);
                }
              });
}

template <typename T>
void LayerNormGradKernel(const ExecutionContext& ctx) {
  const LayerNormGradArgs a = ReadLayerNormGradArgs(ctx);
  using P = ComputeType<T>;  // the parameters' dtype
  Tensor* dx = ctx.Output(GradSlot("X"));
  Tensor* ds = ctx.Output(GradSlot("Scale"));
  Tensor* db = ctx.Output(GradSlot("Bias"));
  P* dsp = ds ? ds->mutable_data<P>() : nullptr;
  P* dbp = db ? db->mutable_data<P>() : nullptr;
  if constexpr (IsHalfType<T>::value) {
    if (dx) HalfLayerNormInputGrad<T>(ctx.device(), a, dx->mutable_data<T>());
    if (dsp || dbp) HalfLayerNormParamGrads<T>(ctx.device(), a, dsp, dbp);
  } else {
    if (dx) LayerNormInputGrad<T>(ctx.device(), a, dx->mutable_data<T>());
    if (dsp || dbp) LayerNormParamGrads<T>(ctx.device(), a, dsp, dbp);
  }
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
    .CPUKernel<double>(LayerNormKernel<double>)
    .CPUKernel<bfloat16>(LayerNormKernel<bfloat16>)
    .CPUKernel<float16>(LayerNormKernel<float16>);

REGISTER_GRAD_OP(layer_norm_grad)
    .Doc("Gradients of layer_norm with respect to X, Scale and Bias.")
    .SetInferShape(LayerNormGradInferShape)
    .CPUKernel<float>(LayerNormGradKernel<float>)
    .CPUKernel<double>(LayerNormGradKernel<double>)
    .CPUKernel<bfloat16>(LayerNormGradKernel<bfloat16>)
    .CPUKernel<float16>(LayerNormGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
