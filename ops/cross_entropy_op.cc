// cross_entropy: Y[i] = -log(X[i, Label[i]]) for rows of probabilities.
//
// X is [..., C] (usually [N, C], the output of softmax); its leading dims
// form the rows and Label is [..., 1] int64 with the same leading dims. Rows
// whose label equals ignore_index get loss 0 and gradient 0. Any other label
// outside [0, C) is an error naming the Label variable.
#include <cmath>
#include <string>

#include "ops/label_helpers.h"

namespace fluid {
namespace ops {
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
  const Tensor& x = ctx.Input("X");
  const Tensor& label = ctx.Input("Label");
  Tensor* y = ctx.Output("Y");
  const int rank = x.shape().rank();
  const int64_t rows = x.shape().Product(0, rank - 1);
  const int64_t classes = x.shape()[rank - 1];
  const int64_t ignore = ctx.Attr<int32_t>("ignore_index");
  const int64_t* ld = label.data<int64_t>();
  CheckLabels(ctx, ld, rows, classes, ignore);
  const T* xd = x.data<T>();
  T* yd = y->mutable_data<T>();
  for (int64_t i = 0; i < rows; ++i)
    yd[i] = ld[i] == ignore ? T(0) : -std::log(xd[i * classes + ld[i]]);
}

template <typename T>
void CrossEntropyGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& label = ctx.Input("Label");
  const Tensor& dy = ctx.Input(GradSlot("Y"));
  const int rank = x.shape().rank();
  const int64_t rows = x.shape().Product(0, rank - 1);
  const int64_t classes = x.shape()[rank - 1];
  const int64_t ignore = ctx.Attr<int32_t>("ignore_index");
  const int64_t* ld = label.data<int64_t>();
  CheckLabels(ctx, ld, rows, classes, ignore);
  const T* xd = x.data<T>();
  const T* dyd = dy.data<T>();
  T* dxd = dx->mutable_data<T>();
  std::fill_n(dxd, rows * classes, T(0));
  for (int64_t i = 0; i < rows; ++i) {
    if (ld[i] == ignore) continue;
    int64_t j = i * classes + ld[i];
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
    .SetGradMaker(DefaultGradMaker("cross_entropy_grad", {"X", "Label"}, {},
                                   {"Y"}, {"X"}))
    .CPUKernel<float>(CrossEntropyKernel<float>)
    .CPUKernel<double>(CrossEntropyKernel<double>);

REGISTER_OP(cross_entropy_grad)
    .Doc(
        "Gradient of cross_entropy with respect to X: "
        "-Y@GRAD[i] / X[i, Label[i]] at the label, 0 elsewhere.")
    .Input("X", "the forward X")
    .Input("Label", "the forward Label")
    .Input(GradSlot("Y"), "gradient of Y")
    .OptionalOutput(GradSlot("X"), "gradient of X")
    .Attr<int32_t>("ignore_index", -100, "as in cross_entropy")
    .SetInferShape(CrossEntropyGradInferShape)
    .CPUKernel<float>(CrossEntropyGradKernel<float>)
    .CPUKernel<double>(CrossEntropyGradKernel<double>);

}  // namespace ops
}  // namespace fluid
