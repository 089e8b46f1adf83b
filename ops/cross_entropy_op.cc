// cross_entropy: Y[i] = -log(X[i, Label[i]]) for rows of probabilities.
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

void CrossEntropyInferShape(InferShapeContext* ctx) {
  Shape y = CheckScoresAndLabel(*ctx, "cross_entropy", "X");
  ctx->SetOutputShape("Y", y);
  ctx->SetOutputDtype("Y", ctx->GetInputDtype("X"));
}

void CrossEntropyGradInferShape(InferShapeContext* ctx) {
  Shape y = CheckScoresAndLabel(*ctx, "cross_entropy_grad", "X");
  Shape dy = ctx->GetInputShape(GradSlot("Y"));
  FLUID_ENFORCE(ShapeMatches(y, dy) || ShapeMatches(dy, y),
                "cross_entropy_grad: Y@GRAD '", ctx->InputName(GradSlot("Y")),
                "' has shape ", dy, ", expected ", y);
  ctx->ShareShape("X", GradSlot("X"));
}

template <typename T>
void CrossEntropyKernel(const ExecutionContext& ctx) {
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
    .Input("Label", "int64 class indices [N, 1] (or [..., 1])")
    .Output("Y", "loss per row [N, 1] (or [..., 1])")
    .Attr<int32_t>("ignore_index", -100,
                   "rows with this label get loss 0 and gradient 0")
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
        "-Y@GRAD[i] / X[i, Label[i]] at the label, 0 elsewhere.")
    .SetInferShape(CrossEntropyGradInferShape)
    .CPUKernel<float>(CrossEntropyGradKernel<float>)
    .CPUKernel<double>(CrossEntropyGradKernel<double>);

}  // namespace ops
}  // namespace fluid
