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
//
// With soft_label (Fluid's attr), Label holds label probabilities of
// Logits' shape and dtype (no gradient flows to it) and Loss[i] =
// sum_j Label[i, j] * (logsumexp(Logits[i]) - Logits[i, j]), that is
// -sum_j Label[i, j] * log(Softmax[i, j]) without taking the log of a
// softmax that may have underflowed to 0. Its gradient is
// Logits@GRAD = (Softmax * sum_j Label[i, j] - Label) * Loss@GRAD: Fluid's
// (Softmax - Label) * Loss@GRAD for label rows that sum to 1, and exact for
// any others. ignore_index does not apply to soft labels.
#include <algorithm>
#include <cmath>
#include <string>

#include "ops/label_helpers.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

// Label against the scores in `slot`: int64 class ids [..., 1], or with
// soft_label probabilities of the scores' shape and dtype. Returns Loss's
// shape, [..., 1].
Shape CheckLabel(const InferShapeContext& ctx, const std::string& op,
                 const std::string& slot) {
  if (!ctx.Attr<bool>("soft_label")) return CheckScoresAndLabel(ctx, op, slot);
  const Shape x = ctx.GetInputShape(slot), l = ctx.GetInputShape("Label");
  FLUID_ENFORCE(x.rank() >= 2, op, ": ", slot, " '", ctx.InputName(slot),
                "' must be at least 2-D [N, C], got ", x);
  FLUID_ENFORCE(ShapesCompatible(x, l) &&
                    ctx.GetInputDtype("Label") == ctx.GetInputDtype(slot),
                op, ": with soft_label, Label '", ctx.InputName("Label"), "' (",
                ctx.GetInputDtype("Label"), " ", l,
                ") must have the shape and dtype of ", slot, " '",
                ctx.InputName(slot), "' (", ctx.GetInputDtype(slot), " ", x,
                ")");
  Shape loss = x;
  loss[loss.rank() - 1] = 1;
  return loss;
}

void SoftmaxWithCrossEntropyInferShape(InferShapeContext* ctx) {
  Shape loss = CheckLabel(*ctx, "softmax_with_cross_entropy", "Logits");
  ctx->ShareShape("Logits", "Softmax");
  ctx->SetOutputShape("Loss", loss);
  ctx->SetOutputDtype("Loss", ctx->GetInputDtype("Logits"));
}

void SoftmaxWithCrossEntropyGradInferShape(InferShapeContext* ctx) {
  const char* op = "softmax_with_cross_entropy_grad";
  Shape loss = CheckLabel(*ctx, op, "Softmax");
  Shape dloss = ctx->GetInputShape(GradSlot("Loss"));
  FLUID_ENFORCE(ShapesCompatible(loss, dloss), op, ": Loss@GRAD '",
                ctx->InputName(GradSlot("Loss")), "' has shape ", dloss,
                ", expected ", loss);
  ctx->ShareShape("Softmax", GradSlot("Logits"));
}

// The [rows, classes] view of class scores [..., C].
struct Rows {
  int64_t rows, classes;
};
Rows RowsOf(const Tensor& scores) {
  const int rank = scores.shape().rank();
  return {scores.shape().Product(0, rank - 1), scores.shape()[rank - 1]};
}

// s = exp(x - max(x)) over one row of `classes` scores (softmax's stable
// numerator); returns the sum of s and sets *mx to max(x).
template <typename T>
T ShiftedExpRow(const T* x, int64_t classes, T* s, T* mx) {
  *mx = *std::max_element(x, x + classes);
  T sum = 0;
  for (int64_t j = 0; j < classes; ++j) {
    s[j] = std::exp(x[j] - *mx);
    sum += s[j];
  }
  return sum;
}

template <typename T>
void SoftLabelKernel(const ExecutionContext& ctx) {
  const Tensor& logits = ctx.Input("Logits");
  const Rows r = RowsOf(logits);
  const int64_t classes = r.classes;
  const T* xd = logits.data<T>();
  const T* zd = ctx.Input("Label").data<T>();
  T* sd = ctx.Output("Softmax")->mutable_data<T>();
  T* lossd = ctx.Output("Loss")->mutable_data<T>();
  ParallelFor(ctx.device(), r.rows, 10.0 * classes,
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) {
                  const T* x = xd + i * classes;
                  const T* z = zd + i * classes;
                  T* s = sd + i * classes;
                  T mx;
                  const T sum = ShiftedExpRow(x, classes, s, &mx);
                  T inv = T(1) / sum, lse = std::log(sum), loss = 0;
                  for (int64_t j = 0; j < classes; ++j) {
                    s[j] *= inv;
                    loss += z[j] * (lse - (x[j] - mx));
                  }
                  lossd[i] = loss;
                }
              });
}

template <typename T>
void SoftLabelGradKernel(const ExecutionContext& ctx, Tensor* dlogits) {
  const Tensor& softmax = ctx.Input("Softmax");
  const Rows r = RowsOf(softmax);
  const int64_t classes = r.classes;
  const T* sd = softmax.data<T>();
  const T* zd = ctx.Input("Label").data<T>();
  const T* dld = ctx.Input(GradSlot("Loss")).data<T>();
  T* dxd = dlogits->mutable_data<T>();
  ParallelFor(ctx.device(), r.rows, 3.0 * classes,
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) {
                  const T* s = sd + i * classes;
                  const T* z = zd + i * classes;
                  T* dx = dxd + i * classes;
                  T zsum = 0;
                  for (int64_t j = 0; j < classes; ++j) zsum += z[j];
                  const T g = dld[i];
                  for (int64_t j = 0; j < classes; ++j)
                    dx[j] = (s[j] * zsum - z[j]) * g;
                }
              });
}

template <typename T>
void SoftmaxWithCrossEntropyKernel(const ExecutionContext& ctx) {
  if (ctx.Attr<bool>("soft_label")) return SoftLabelKernel<T>(ctx);
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
          T mx;
          const T sum = ShiftedExpRow(x, classes, s, &mx);
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
  if (ctx.Attr<bool>("soft_label")) return SoftLabelGradKernel<T>(ctx, dlogits);
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
    .Input("Label",
           "int64 class indices [N, 1] (or [..., 1]); with soft_label, "
           "label probabilities of Logits' shape and dtype")
    .Output("Softmax", "softmax of Logits, same shape (not differentiable)")
    .Output("Loss", "loss per row [N, 1] (or [..., 1])")
    .Attr<int32_t>("ignore_index", -100,
                   "rows with this label get loss 0 and gradient 0 (hard "
                   "labels only)")
    .Attr<bool>("soft_label", false,
                "Label holds probabilities: Loss[i] = sum_j Label[i, j] * "
                "(logsumexp(Logits[i]) - Logits[i, j])")
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
