// softmax over one axis (the last by default): along it,
// Out = exp(X - max) / sum(exp(X - max)), the max subtracted so that large
// inputs do not overflow.
//
// Masking: an additive mask (a large negative value, e.g. -1e9, added to the
// logits to exclude) gives exactly 0 where it applies, since exp of a value
// that far below the max underflows to 0 (below about -104 in float32, -745
// in float64). A row masked everywhere gives no NaN: every entry is then
// about -1e9, the max is subtracted first, and the row comes out as the
// softmax of what remains (near uniform in float32, where -1e9 swamps the
// logits; exactly the unmasked softmax in float64), as PyTorch's does.
#include "ops/softmax_op.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/grad_checks.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

// The axis in [0, rank) that `axis` (negative: from the end) names.
int NormalizeSoftmaxAxis(const std::string& op, const std::string& x_name,
                         const Shape& x, int axis) {
  const int rank = x.rank();
  FLUID_ENFORCE(axis >= -rank && axis < rank, op, ": attr axis=", axis,
                " is out of range for X '", x_name, "' ", x, " (rank ", rank,
                ")");
  return axis < 0 ? axis + rank : axis;
}

}  // namespace

SoftmaxDims GetSoftmaxDims(const ExecutionContext& ctx, const Tensor& t) {
  const Shape& s = t.shape();
  const std::string& name =
      ctx.HasInput("X") ? ctx.InputName("X") : ctx.InputName("Out");
  const int axis =
      NormalizeSoftmaxAxis(ctx.type(), name, s, ctx.Attr<int32_t>("axis"));
  SoftmaxDims d;
  d.n = s[axis];
  d.inner = s.Product(axis + 1, s.rank());
  d.outer = d.n * d.inner == 0 ? 0 : t.numel() / (d.n * d.inner);
  return d;
}

SoftmaxGradArgs ReadSoftmaxGradArgs(const ExecutionContext& ctx) {
  const Tensor& out = ctx.Input("Out");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  CheckOutGradLikeOut(ctx, out, dout);
  return {out, dout, GetSoftmaxDims(ctx, out)};
}

namespace {

template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

void SoftmaxInferShape(InferShapeContext* ctx) {
  Shape x = ctx->GetInputShape("X");
  FLUID_ENFORCE(x.rank() >= 1, "softmax: X '", ctx->InputName("X"),
                "' must have at least one dim, its shape is ", x);
  NormalizeSoftmaxAxis("softmax", ctx->InputName("X"), x,
                       ctx->Attr<int32_t>("axis"));
  ctx->ShareShape("X", "Out");
}

// The softmaxes over a strided axis: one per (outer, inner) pair, its n
// elements `inner` apart.
template <typename T>
void StridedSoftmax(const CPUDeviceContext& dev, const SoftmaxDims& d,
                    const T* xp, T* op) {
  const int64_t n = d.n, inner = d.inner;
  ParallelFor(dev, d.outer * inner, 12.0 * static_cast<double>(n),
              [&](int64_t b, int64_t e) {
                for (int64_t c = b; c < e; ++c) {
                  const int64_t base = (c / inner) * n * inner + c % inner;
                  const T* x = xp + base;
                  T* o = op + base;
                  T mx = x[0];
                  for (int64_t j = 1; j < n; ++j)
                    mx = std::max(mx, x[j * inner]);
                  T sum = 0;
                  for (int64_t j = 0; j < n; ++j) {
                    o[j * inner] = std::exp(x[j * inner] - mx);
                    sum += o[j * inner];
                  }
                  const T inv = static_cast<T>(1) / sum;
                  for (int64_t j = 0; j < n; ++j) o[j * inner] *= inv;
                }
              });
}

template <typename T>
void SoftmaxKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  const SoftmaxDims dims = GetSoftmaxDims(ctx, x);
  const T* xp = x.data<T>();
  T* op = out->mutable_data<T>();
  if (dims.inner != 1) {
    StridedSoftmax<T>(ctx.device(), dims, xp, op);
    return;
  }
  const int64_t rows = dims.outer, d = dims.n;
  // exp costs ~10 flops a lane.
  ParallelFor(ctx.device(), rows, 12.0 * static_cast<double>(d),
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) {
                  ConstArrayMap<T> xr(xp + r * d, d);
                  ArrayMap<T> o(op + r * d, d);
                  const T mx = xr.maxCoeff();
                  o = (xr - mx).exp();
                  o *= static_cast<T>(1) / o.sum();
                }
              });
}

void SoftmaxGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("Out", GradSlot("X"));
}

// dX = (dOut - sum(dOut * Out, axis)) * Out over a strided axis.
template <typename T>
void StridedSoftmaxGrad(const CPUDeviceContext& dev, const SoftmaxDims& d,
                        const T* yp, const T* gp, T* dp) {
  const int64_t n = d.n, inner = d.inner;
  ParallelFor(dev, d.outer * inner, 4.0 * static_cast<double>(n),
              [&](int64_t b, int64_t e) {
                for (int64_t c = b; c < e; ++c) {
                  const int64_t base = (c / inner) * n * inner + c % inner;
                  T dot = 0;
                  for (int64_t j = 0; j < n; ++j)
                    dot += gp[base + j * inner] * yp[base + j * inner];
                  for (int64_t j = 0; j < n; ++j) {
                    const int64_t i = base + j * inner;
                    dp[i] = (gp[i] - dot) * yp[i];
                  }
                }
              });
}

// dX = (dOut - sum(dOut * Out, row)) * Out.
template <typename T>
void SoftmaxGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const SoftmaxGradArgs a = ReadSoftmaxGradArgs(ctx);
  const T* yp = a.out.data<T>();
  const T* gp = a.dout.data<T>();
  T* dp = dx->mutable_data<T>();
  if (a.dims.inner != 1) {
    StridedSoftmaxGrad<T>(ctx.device(), a.dims, yp, gp, dp);
    return;
  }
  const int64_t d = a.dims.n;
  ParallelFor(ctx.device(), a.dims.outer, 4.0 * static_cast<double>(d),
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) {
                  ConstArrayMap<T> y(yp + r * d, d);
                  ConstArrayMap<T> g(gp + r * d, d);
                  const T dot = (g * y).sum();
                  ArrayMap<T>(dp + r * d, d) = (g - dot) * y;
                }
              });
}

}  // namespace

REGISTER_OP(softmax)
    .Doc(
        "Softmax over one axis of X (the last by default), numerically "
        "stable; additive -1e9 masks give exact zeros, fully masked rows no "
        "NaN.")
    .Input("X", "logits, [..., D, ...]")
    .Output("Out", "probabilities, same shape; each slice along axis sums to 1")
    .Attr<int32_t>("axis", -1, "the softmax axis; negative counts from the end")
    .SetInferShape(SoftmaxInferShape)
    .SetGrad(GradSpec("softmax_grad")
                 .Outputs({"Out"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(SoftmaxKernel<float>)
    .CPUKernel<double>(SoftmaxKernel<double>);

REGISTER_GRAD_OP(softmax_grad)
    .Doc("dX = (dOut - sum(dOut * Out, axis)) * Out.")
    .SetInferShape(SoftmaxGradInferShape)
    .CPUKernel<float>(SoftmaxGradKernel<float>)
    .CPUKernel<double>(SoftmaxGradKernel<double>);

}  // namespace ops
}  // namespace fluid
