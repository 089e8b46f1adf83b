// cross_entropy: Y[i] = -log(X[i, Label[i]]) for rows of probabilities,
// or with soft_label, Y[i] = -sum_j Label[i, j] * log(X[i, j]) for rows of
// label probabilities (Label float, X's shape and dtype; no gradient flows
// to it).
//
// X is [..., C] (usually [N, C], the output of softmax); its leading dims
// form the rows and Label is [..., 1] int64 with the same leading dims. Rows
// whose label equals ignore_index get loss 0 and gradient 0. Any other label
// outside [0, C) is an error naming the Label variable.
#include <cmath>
#include <string>

#include "ops/label_helpers.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

LabelArgs ReadLabelArgs(const ExecutionContext& ctx,
                        const std::string& scores_slot) {
  const Tensor& scores = ctx.Input(scores_slot);
  const int rank = scores.shape().rank();
  return {scores, ctx.Input("Label"), scores.shape().Product(0, rank - 1),
          scores.shape()[rank - 1], ctx.Attr<int32_t>("ignore_index")};
}

namespace {

// Soft labels: Label has X's shape and dtype. Returns Y's shape.
Shape CheckSoftLabel(const InferShapeContext& ctx, const std::string& op) {
  const Shape x = ctx.GetInputShape("X"), l = ctx.GetInputShape("Label");
  FLUID_ENFORCE(x.rank() >= 2, op, ": X '", ctx.InputName("X"),
                "' must be at least 2-D [N, C], got ", x);
  FLUID_ENFORCE(ShapesCompatible(x, l) &&
                    ctx.GetInputDtype("Label") == ctx.GetInputDtype("X"),
                op, ": with soft_label, Label '", ctx.InputName("Label"), "' (",
                ctx.GetInputDtype("Label"), " ", l,
                ") must have the shape and dtype of X '", ctx.InputName("X"),
                "' (", ctx.GetInputDtype("X"), " ", x, ")");
  Shape y = x;
  y[y.rank() - 1] = 1;
  return y;
}

Shape CheckLabel(const InferShapeContext& ctx, const std::string& op) {
  return ctx.Attr<bool>("soft_label") ? CheckSoftLabel(ctx, op)
                                      : CheckScoresAndLabel(ctx, op, "X");
}

void CrossEntropyInferShape(InferShapeContext* ctx) {
  Shape y = CheckLabel(*ctx, "cross_entropy");
  ctx->SetOutputShape("Y", y);
  ctx->SetOutputDtype("Y", ctx->GetInputDtype("X"));
  ctx->ShareLoD("X", "Y");  // a cost per row: per token of a sequence
}

void CrossEntropyGradInferShape(InferShapeContext* ctx) {
  Shape y = CheckLabel(*ctx, "cross_entropy_grad");
  Shape dy = ctx->GetInputShape(GradSlot("Y"));
  FLUID_ENFORCE(ShapeMatches(y, dy) || ShapeMatches(dy, y),
                "cross_entropy_grad: Y@GRAD '", ctx->InputName(GradSlot("Y")),
                "' has shape ", dy, ", expected ", y);
  ctx->ShareShape("X", GradSlot("X"));
}

// The [rows, classes] view of X, for soft labels.
struct SoftRows {
  int64_t rows, classes;
};
SoftRows SoftRowsOf(const Tensor& x) {
  const int rank = x.shape().rank();
  return {x.shape().Product(0, rank - 1), x.shape()[rank - 1]};
}

template <typename T>
void SoftCrossEntropyKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const SoftRows s = SoftRowsOf(x);
  const T* xd = x.data<T>();
  const T* zd = ctx.Input("Label").data<T>();
  T* yd = ctx.Output("Y")->mutable_data<T>();
  for (int64_t i = 0; i < s.rows; ++i) {
    T sum = 0;
    for (int64_t j = i * s.classes; j < (i + 1) * s.classes; ++j)
      sum -= zd[j] * std::log(xd[j]);
    yd[i] = sum;
  }
}

template <typename T>
void SoftCrossEntropyGradKernel(const ExecutionContext& ctx, Tensor* dx) {
  const Tensor& x = ctx.Input("X");
  const SoftRows s = SoftRowsOf(x);
  const T* xd = x.data<T>();
  const T* zd = ctx.Input("Label").data<T>();
  const T* dyd = ctx.Input(GradSlot("Y")).data<T>();
  T* dxd = dx->mutable_data<T>();
  for (int64_t j = 0; j < s.rows * s.classes; ++j)
    dxd[j] = -dyd[j / s.classes] * zd[j] / xd[j];
}

template <typename T>
void CrossEntropyKernel(const ExecutionContext& ctx) {
  if (ctx.Attr<bool>("soft_label")) return SoftCrossEntropyKernel<T>(ctx);
  const LabelArgs a = ReadLabelArgs(ctx, "X");
  const int64_t* ld = a.label.data<int64_t>();
  CheckLabels(ctx, ld, a.rows, a.classes, a.ignore);
  const T* xd = a.scores.data<T>();
  T* yd = ctx.Output("Y")->mutable_data<T>();
  for (int64_t i = 0; i < a.rows; ++i)
    yd[i] = ld[i] == a.ignore ? T(0) : -std::log(xd[i * a.classes + ld[i]]);
}

template <typename T>
void CrossEntropyGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  if (ctx.Attr<bool>("soft_label"))
    return SoftCrossEntropyGradKernel<T>(ctx, dx);
  const LabelArgs a = ReadLabelArgs(ctx, "X");
  const int64_t* ld = a.label.data<int64_t>();
  CheckLabels(ctx, ld, a.rows, a.classes, a.ignore);
  const T* xd = a.scores.data<T>();
  const T* dyd = ctx.Input(GradSlot("Y")).data<T>();
  T* dxd = dx->mutable_data<T>();
  std::fill_n(dxd, a.rows * a.classes, T(0));
  for (int64_t i = 0; i < a.rows; ++i) {
    if (ld[i] == a.ignore) continue;
    int64_t j = i * a.classes + ld[i];
    dxd[j] = -dyd[i] / xd[j];
  }
}

}  // namespace

REGISTER_OP(cross_entropy)
    .Doc(
        "Cross entropy of probabilities against hard labels: "
        "Y[i] = -log(X[i, Label[i]]).")
    .Input("X", "probabilities [N, C] (or [..., C]), e.g. softmax output")
    .Input("Label",
           "int64 class indices [N, 1] (or [..., 1]); with soft_label, "
           "probabilities of X's shape and dtype")
    .Output("Y", "loss per row [N, 1] (or [..., 1])")
    .Attr<int32_t>("ignore_index", -100,
                   "rows with this label get loss 0 and gradient 0")
    .Attr<bool>("soft_label", false,
                "Label holds a probability per class instead of an index")
    .SetInferShape(CrossEntropyInferShape)
    .SetGrad(GradSpec("cross_entropy_grad")
                 .Inputs({"X", "Label"})
                 .OutGrads({"Y"})
                 .InGrads({"X"}))
    .CPUKernel<float>(CrossEntropyKernel<float>)
    .CPUKernel<double>(CrossEntropyKernel<double>);

REGISTER_GRAD_OP(cross_entropy_grad)
    .Doc(
        "Gradient of cross_entropy with respect to X: "
        "-Y@GRAD[i] / X[i, Label[i]] at the label, 0 elsewhere (soft "
        "labels: -Y@GRAD[i] * Label[i, j] / X[i, j]).")
    .SetInferShape(CrossEntropyGradInferShape)
    .CPUKernel<float>(CrossEntropyGradKernel<float>)
    .CPUKernel<double>(CrossEntropyGradKernel<double>);

}  // namespace ops
}  // namespace fluid
