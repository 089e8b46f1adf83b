// sigmoid_cross_entropy_with_logits: elementwise binary cross entropy of
// sigmoid(X) against probabilities Label (same shape), computed from the
// logits in a numerically stable form (see the .h). Elements whose label
// equals ignore_index get loss 0 and gradient 0; with `normalize`, every
// loss (and gradient) is divided by the number of elements not ignored.
// No gradient flows to Label.
#include "ops/sigmoid_cross_entropy_with_logits_op.h"

#include <string>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

constexpr const char* kOp = "sigmoid_cross_entropy_with_logits";

void CheckLabelLikeX(const InferShapeContext& ctx) {
  const Shape x = ctx.GetInputShape("X"), z = ctx.GetInputShape("Label");
  FLUID_ENFORCE(ShapesCompatible(x, z), kOp, ": Label '",
                ctx.InputName("Label"), "' has shape ", z, " but X '",
                ctx.InputName("X"), "' has shape ", x);
  FLUID_ENFORCE(ctx.GetInputDtype("Label") == ctx.GetInputDtype("X"), kOp,
                ": Label '", ctx.InputName("Label"), "' is ",
                ctx.GetInputDtype("Label"), " but X '", ctx.InputName("X"),
                "' is ", ctx.GetInputDtype("X"));
}

void SigmoidCeInferShape(InferShapeContext* ctx) {
  CheckLabelLikeX(*ctx);
  ctx->ShareShape("X", "Out");
}

void SigmoidCeGradInferShape(InferShapeContext* ctx) {
  CheckLabelLikeX(*ctx);
  ctx->ShareShape("X", GradSlot("X"));
}

// The factor every element is scaled by: 1, or 1 / (elements not ignored).
template <typename T>
T NormalizeFactor(const ExecutionContext& ctx, const T* z, int64_t n,
                  T ignore) {
  if (!ctx.Attr<bool>("normalize")) return T(1);
  return T(1) / static_cast<T>(CountNotIgnored(z, n, ignore));
}

template <typename T>
void SigmoidCeKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const T* xd = x.data<T>();
  const T* zd = ctx.Input("Label").data<T>();
  const int64_t n = x.numel();
  const T ignore = static_cast<T>(ctx.Attr<int32_t>("ignore_index"));
  const T scale = NormalizeFactor(ctx, zd, n, ignore);
  T* out = ctx.Output("Out")->mutable_data<T>();
  ParallelFor(ctx.device(), n, 20.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      out[i] = SigmoidCeLoss(xd[i], zd[i], ignore) * scale;
  });
}

template <typename T>
void SigmoidCeGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const T* xd = x.data<T>();
  const T* zd = ctx.Input("Label").data<T>();
  const T* dy = ctx.Input(GradSlot("Out")).data<T>();
  const int64_t n = x.numel();
  const T ignore = static_cast<T>(ctx.Attr<int32_t>("ignore_index"));
  const T scale = NormalizeFactor(ctx, zd, n, ignore);
  T* g = dx->mutable_data<T>();
  ParallelFor(ctx.device(), n, 20.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      g[i] = SigmoidCeGrad(xd[i], zd[i], ignore) * scale * dy[i];
  });
}

}  // namespace

REGISTER_OP(sigmoid_cross_entropy_with_logits)
    .Doc(
        "Out = max(X, 0) - X * Label + log(1 + exp(-|X|)), elementwise: the "
        "cross entropy of sigmoid(X) against Label.")
    .Input("X", "logits, any shape")
    .Input("Label", "probabilities in [0, 1], X's shape and dtype")
    .Output("Out", "the loss of every element, X's shape")
    .Attr<int32_t>("ignore_index", -100,
                   "elements with this label get loss 0 and gradient 0")
    .Attr<bool>("normalize", false,
                "divide by the number of elements not ignored")
    .SetInferShape(SigmoidCeInferShape)
    .SetGrad(GradSpec("sigmoid_cross_entropy_with_logits_grad")
                 .Inputs({"X", "Label"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(SigmoidCeKernel<float>)
    .CPUKernel<double>(SigmoidCeKernel<double>);

REGISTER_GRAD_OP(sigmoid_cross_entropy_with_logits_grad)
    .Doc("X@GRAD = (sigmoid(X) - Label) * Out@GRAD, 0 where ignored.")
    .SetInferShape(SigmoidCeGradInferShape)
    .CPUKernel<float>(SigmoidCeGradKernel<float>)
    .CPUKernel<double>(SigmoidCeGradKernel<double>);

}  // namespace ops
}  // namespace fluid
