// accuracy: top-k accuracy of class scores against hard labels.
//
// With k = 1 a row is correct when the index of its largest score (the
// lowest index among ties) equals its label; with k > 1, when fewer than k
// scores rank before the label's (a larger score, or an equal one at a
// lower index: top_k's order). Not differentiable: it has no grad maker, so
// the autodiff never walks through it.
#include <string>

#include "ops/op_helpers.h"
#include "ops/topk_op.h"

namespace fluid {
namespace ops {
namespace {

void AccuracyInferShape(InferShapeContext* ctx) {
  const std::string& on = ctx->InputName("Out");
  const std::string& ln = ctx->InputName("Label");
  Shape out = ctx->GetInputShape("Out");
  Shape label = ctx->GetInputShape("Label");
  FLUID_ENFORCE(out.rank() == 2, "accuracy: Out '", on,
                "' must be 2-D [N, C], got ", out);
  FLUID_ENFORCE(ctx->GetInputDtype("Label") == DataType::kInt64,
                "accuracy: Label '", ln, "' must be int64, got ",
                ctx->GetInputDtype("Label"));
  bool ok = label.rank() == 2 && (label[1] == 1 || label[1] < 0) &&
            (label[0] < 0 || out[0] < 0 || label[0] == out[0]);
  FLUID_ENFORCE(ok, "accuracy: Label '", ln, "' has shape ", label,
                " but Out '", on, "' has shape ", out, "; Label must be [",
                out[0], ", 1]");
  FLUID_ENFORCE(ctx->Attr<int32_t>("k") >= 1, "accuracy: k ",
                ctx->Attr<int32_t>("k"), " for Out '", on,
                "' must be positive");
  ctx->SetOutputShape("Accuracy", Shape{1});
  ctx->SetOutputDtype("Accuracy", ctx->GetInputDtype("Out"));
  ctx->SetOutputShape("Correct", Shape{1});
  ctx->SetOutputDtype("Correct", DataType::kInt64);
  ctx->SetOutputShape("Total", Shape{1});
  ctx->SetOutputDtype("Total", DataType::kInt64);
}

template <typename T>
void AccuracyKernel(const ExecutionContext& ctx) {
  const Tensor& out = ctx.Input("Out");
  const Tensor& label = ctx.Input("Label");
  const int64_t rows = out.shape()[0], classes = out.shape()[1];
  const T* od = out.data<T>();
  const int64_t* ld = label.data<int64_t>();
  const int64_t k = ctx.Attr<int32_t>("k");
  int64_t correct = 0;
  for (int64_t i = 0; i < rows; ++i) {
    FLUID_ENFORCE(ld[i] >= 0 && ld[i] < classes, "Label '",
                  ctx.InputName("Label"), "' holds ", ld[i], " at row ", i,
                  ", outside [0, ", classes, ")");
    const T* row = od + i * classes;
    if (k > 1) {
      correct += InTopK(row, classes, ld[i], k);
      continue;
    }
    int64_t best = 0;
    for (int64_t j = 1; j < classes; ++j)
      if (row[j] > row[best]) best = j;
    correct += best == ld[i];
  }
  *ctx.Output("Accuracy")->mutable_data<T>() =
      rows > 0 ? static_cast<T>(correct) / static_cast<T>(rows) : T(0);
  if (Tensor* c = ctx.Output("Correct")) *c->mutable_data<int64_t>() = correct;
  if (Tensor* t = ctx.Output("Total")) *t->mutable_data<int64_t>() = rows;
}

}  // namespace

REGISTER_OP(accuracy)
    .Doc(
        "Top-k accuracy: the fraction of rows whose label's score is among "
        "their k largest (lowest index first among ties).")
    .Input("Out", "class scores [N, C] (probabilities or logits)")
    .Input("Label", "int64 class indices [N, 1]")
    .Output("Accuracy", "[1], Correct / Total, in Out's dtype (0 if N = 0)")
    .OptionalOutput("Correct", "[1] int64, rows predicted correctly")
    .OptionalOutput("Total", "[1] int64, rows seen (N)")
    .Attr<int32_t>("k", 1, "how many of the best scores may hold the label")
    .KernelDtypeFrom("Out")
    .SetInferShape(AccuracyInferShape)
    .CPUKernel<float>(AccuracyKernel<float>)
    .CPUKernel<double>(AccuracyKernel<double>);

}  // namespace ops
}  // namespace fluid
