// softmax_with_cross_entropy: softmax over the last dim fused with the cross
// entropy against hard labels.
//
// Loss[i] = logsumexp(Logits[i]) - Logits[i, Label[i]], computed after
// subtracting the row max, so large logits neither overflow nor lose the
// loss to log(0). The gradient needs only the softmax:
// Logits@GRAD = (Softmax - onehot(Label)) * Loss@GRAD. Softmax is an output
// for reuse (prediction, accuracy), not a differentiable one: a gradient
// flowing into it is ignored. Rows labelled ignore_index get loss 0 and
// gradient 0; any other label outside [0, C) is an error naming Label.
#include <algorithm>
#include <cmath>
#include <string>

#include "ops/label_helpers.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

void SoftmaxWithCrossEntropyInferShape(InferShapeContext* ctx) {
  Shape loss =
      CheckScoresAndLabel(*ctx, "softmax_with_cross_entropy", "Logits");
  ctx->ShareShape("Logits", "Softmax");
  ctx->SetOutputShape("Loss", loss);
  ctx->SetOutputDtype("Loss", ctx->GetInputDtype("Logits"));
}

void SoftmaxWithCrossEntropyGradInferShape(InferShapeContext* ctx) {
  const char* op = "softmax_with_cross_entropy_grad";
  Shape loss = CheckScoresAndLabel(*ctx, op, "Softmax");
  Shape dloss = ctx->GetInputShape(GradSlot("Loss"));
  FLUID_ENFORCE(ShapesCompatible(loss, dloss), op, ": Loss@GRAD '",
                ctx->InputName(GradSlot("Loss")), "' has shape ", dloss,
                ", expected ", loss);
  ctx->ShareShape("Softmax", GradSlot("Logits"));
}

template <typename T>
void SoftmaxWithCrossEntropyKernel(const ExecutionContext& ctx) {
  const LabelArgs a = ReadLabelArgs(ctx, "Logits");
  const int64_t* ld = a.label.data<int64_t>();
  CheckLabels(ctx, ld, a.rows, a.classes, a.ignore);
  const int64_t classes = a.classes, ignore = a.ignore;
  const T* xd = a.scores.data<T>();
  T* sd = ctx.Output("Softmax")->mutable_data<T>();
  T* lossd = ctx.Output("Loss")->mutable_data<T>();
  ParallelFor(
      ctx.device(), a.rows, 8.0 * classes, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const T* x = xd + i * classes;
          T* s = sd + i * classes;
          T mx = *std::max_element(x, x + classes);
          T sum = 0;
          for (int64_t j = 0; j < classes; ++j) {
            s[j] = std::exp(x[j] - mx);
            sum += s[j];
          }
          T inv = T(1) / sum;
          for (int64_t j = 0; j < classes; ++j) s[j] *= inv;
          lossd[i] = ld[i] == ignore ? T(0) : std::log(sum) - (x[ld[i]] - mx);
        }
      });
}

template <typename T>
void SoftmaxWithCrossEntropyGradKernel(const ExecutionContext& ctx) {
  Tensor* dlogits = ctx.Output(GradSlot("Logits"));
  if (dlogits == nullptr) return;
  const LabelArgs a = ReadLabelArgs(ctx, "Softmax");
  const int64_t* ld = a.label.data<int64_t>();
  CheckLabels(ctx, ld, a.rows, a.classes, a.ignore);
  const int64_t classes = a.classes, ignore = a.ignore;
  const T* sd = a.scores.data<T>();
  const T* dld = ctx.Input(GradSlot("Loss")).data<T>();
  T* dxd = dlogits->mutable_data<T>();
  ParallelFor(ctx.device(), a.rows, 2.0 * classes,
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) {
                  const T* s = sd + i * classes;
                  T* dx = dxd + i * classes;
                  if (ld[i] == ignore) {
                    std::fill_n(dx, classes, T(0));
                    continue;
                  }
                  const T g = dld[i];
                  for (int64_t j = 0; j < classes; ++j) dx[j] = s[j] * g;
                  dx[ld[i]] -= g;
                }
              });
}

}  // namespace

REGISTER_OP(softmax_with_cross_entropy)
    .Doc(
        "Softmax over the last dim and cross entropy against hard labels in "
        "one numerically stable op: Loss[i] = logsumexp(Logits[i]) - "
        "Logits[i, Label[i]].")
    .Input("Logits", "unnormalised scores [N, C] (or [..., C])")
    .Input("Label", "int64 class indices [N, 1] (or [..., 1])")
    .Output("Softmax", "softmax of Logits, same shape (not differentiable)")
    .Output("Loss", "loss per row [N, 1] (or [..., 1])")
    .Attr<int32_t>("ignore_index", -100,
                   "rows with this label get loss 0 and gradient 0")
    .SetInferShape(SoftmaxWithCrossEntropyInferShape)
    .SetGrad(GradSpec("softmax_with_cross_entropy_grad")
                 .Inputs({"Label"})
                 .Outputs({"Softmax"})
                 .OutGrads({"Loss"})
                 .InGrads({"Logits"}))
    .CPUKernel<float>(SoftmaxWithCrossEntropyKernel<float>)
    .CPUKernel<double>(SoftmaxWithCrossEntropyKernel<double>);

REGISTER_GRAD_OP(softmax_with_cross_entropy_grad)
    .Doc(
        "Gradient of softmax_with_cross_entropy with respect to Logits: "
        "(Softmax - onehot(Label)) * Loss@GRAD.")
    .KernelDtypeFrom("Softmax")
    .SetInferShape(SoftmaxWithCrossEntropyGradInferShape)
    .CPUKernel<float>(SoftmaxWithCrossEntropyGradKernel<float>)
    .CPUKernel<double>(SoftmaxWithCrossEntropyGradKernel<double>);

}  // namespace ops
}  // namespace fluid
