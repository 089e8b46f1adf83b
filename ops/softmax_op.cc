// softmax over the last dim: Out[r, :] = exp(X[r, :] - max) / sum(...),
// the row max subtracted so that large inputs do not overflow.
#include "ops/softmax_op.h"

#include "ops/grad_checks.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

void SoftmaxRowsCols(const Tensor& t, int64_t* rows, int64_t* cols) {
  const Shape& s = t.shape();
  *cols = s.rank() == 0 ? 1 : s[s.rank() - 1];
  *rows = *cols == 0 ? 0 : t.numel() / *cols;
}

SoftmaxGradArgs ReadSoftmaxGradArgs(const ExecutionContext& ctx) {
  SoftmaxGradArgs a{ctx.Input("Out"), ctx.Input(GradSlot("Out")), 0, 0};
  CheckOutGradLikeOut(ctx, a.out, a.dout);
  SoftmaxRowsCols(a.out, &a.rows, &a.cols);
  return a;
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
  ctx->ShareShape("X", "Out");
}

template <typename T>
void SoftmaxKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  int64_t rows, d;
  SoftmaxRowsCols(x, &rows, &d);
  const T* xp = x.data<T>();
  T* op = out->mutable_data<T>();
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

// dX = (dOut - sum(dOut * Out, row)) * Out.
template <typename T>
void SoftmaxGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const SoftmaxGradArgs a = ReadSoftmaxGradArgs(ctx);
  const int64_t d = a.cols;
  const T* yp = a.out.data<T>();
  const T* gp = a.dout.data<T>();
  T* dp = dx->mutable_data<T>();
  ParallelFor(ctx.device(), a.rows, 4.0 * static_cast<double>(d),
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
    .Doc("Softmax over the last dim of X, numerically stable.")
    .Input("X", "logits, [..., D]")
    .Output("Out", "probabilities, same shape; each last-dim row sums to 1")
    .SetInferShape(SoftmaxInferShape)
    .SetGrad(GradSpec("softmax_grad")
                 .Outputs({"Out"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(SoftmaxKernel<float>)
    .CPUKernel<double>(SoftmaxKernel<double>);

REGISTER_GRAD_OP(softmax_grad)
    .Doc("dX = (dOut - sum(dOut * Out, last dim)) * Out.")
    .SetInferShape(SoftmaxGradInferShape)
    .CPUKernel<float>(SoftmaxGradKernel<float>)
    .CPUKernel<double>(SoftmaxGradKernel<double>);

}  // namespace ops
}  // namespace fluid
