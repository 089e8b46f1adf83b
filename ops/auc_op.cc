// auc: the area under the ROC curve of a binary classifier, over histograms
// of its predictions that persist across runs (Fluid's auc op).
//
// A row's probability of class 1 (the last column of Predict: [N, 2] as a
// softmax gives it, or [N, 1]) falls in bucket floor(p * num_thresholds) of
// num_thresholds + 1 (AucBucket, auc_op.h). StatPos counts the rows
// labelled 1 per bucket, StatNeg the rows labelled 0. Both are persistable
// int64 variables updated in place (StatPosOut and StatNegOut are bound to
// them), [rows, num_thresholds + 1]:
//  - slide_steps = 0: one row, every batch added to it (the layer's global
//    AUC);
//  - slide_steps = k >= 1: k rows, the histograms of the last k batches,
//    oldest first: each run drops row 0, moves the others up and counts
//    this batch into the last row (the layer's batch AUC; Fluid 1.5's
//    layout).
// AUC, float64 [1], is the area under the curve over the rows' sum
// (AucArea): with no pair of a positive and a negative row in one bucket,
// exactly the fraction of (positive, negative) pairs ranked right.
//
// A prediction outside [0, 1] (or NaN) or a label other than 0 or 1 is an
// error naming the row, raised before any count changes. Not
// differentiable: it has no grad maker. The is_test attr only marks the op
// as one that evaluation programs keep (clone(for_test=True)); it counts
// the same either way.
#include "ops/auc_op.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

// The stat output `out_slot` holding the counts of `in_slot` (the same
// tensor when bound in place, as the layer binds them).
int64_t* StatOutput(const ExecutionContext& ctx, const std::string& in_slot,
                    const std::string& out_slot) {
  const Tensor& in = ctx.Input(in_slot);
  Tensor* out = ctx.Output(out_slot);
  if (out != &in) out->CopyFrom(in);
  return out->mutable_data<int64_t>();
}

void CheckStat(InferShapeContext* ctx, const std::string& slot,
               const std::string& out_slot) {
  const int32_t nt = ctx->Attr<int32_t>("num_thresholds");
  const int32_t steps = ctx->Attr<int32_t>("slide_steps");
  const int64_t rows = AucStatRows(steps), buckets = int64_t{nt} + 1;
  const Shape s = ctx->GetInputShape(slot);
  FLUID_ENFORCE(ctx->GetInputDtype(slot) == DataType::kInt64, "auc: ", slot,
                " '", ctx->InputName(slot), "' must be int64, got ",
                ctx->GetInputDtype(slot));
  const bool ok = s.rank() == 2 && (s[0] < 0 || s[0] == rows) &&
                  (s[1] < 0 || s[1] == buckets);
  FLUID_ENFORCE(ok, "auc: ", slot, " '", ctx->InputName(slot), "' has shape ",
                s, "; with num_thresholds ", nt, " and slide_steps ", steps,
                " it must be [", rows, ", ", buckets, "]");
  ctx->ShareShape(slot, out_slot);
}

void AucInferShape(InferShapeContext* ctx) {
  const std::string& pn = ctx->InputName("Predict");
  const std::string& ln = ctx->InputName("Label");
  const Shape p = ctx->GetInputShape("Predict");
  const Shape label = ctx->GetInputShape("Label");
  FLUID_ENFORCE(p.rank() == 2 && (p[1] < 0 || p[1] == 1 || p[1] == 2),
                "auc: Predict '", pn, "' has shape ", p,
                "; it must be [N, 2] (the probabilities of classes 0 and 1) "
                "or [N, 1] (the probability of class 1)");
  FLUID_ENFORCE(ctx->GetInputDtype("Label") == DataType::kInt64, "auc: Label '",
                ln, "' must be int64, got ", ctx->GetInputDtype("Label"));
  const bool ok = label.rank() == 2 && (label[1] == 1 || label[1] < 0) &&
                  (label[0] < 0 || p[0] < 0 || label[0] == p[0]);
  FLUID_ENFORCE(ok, "auc: Label '", ln, "' has shape ", label, " but Predict '",
                pn, "' has shape ", p, "; Label must be [", p[0], ", 1]");
  CheckStat(ctx, "StatPos", "StatPosOut");
  CheckStat(ctx, "StatNeg", "StatNegOut");
  ctx->SetOutputShape("AUC", Shape{1});
  ctx->SetOutputDtype("AUC", DataType::kFloat64);
}

// Drops row 0 of the window, moves the others up and clears the last.
void ShiftWindow(int64_t* stats, int64_t rows, int64_t buckets) {
  const int64_t kept = (rows - 1) * buckets;
  std::memmove(stats, stats + buckets, sizeof(int64_t) * kept);
  std::fill(stats + kept, stats + kept + buckets, int64_t{0});
}

// Each row's bucket, after checking every prediction and label.
template <typename T>
std::vector<int64_t> Buckets(const ExecutionContext& ctx, int64_t nt) {
  const Tensor& predict = ctx.Input("Predict");
  const int64_t n = predict.shape()[0], width = predict.shape()[1];
  const T* p = predict.data<T>();
  const int64_t* label = ctx.Input("Label").data<int64_t>();
  std::vector<int64_t> bucket(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const T v = p[i * width + width - 1];
    bucket[i] = AucBucket(v, nt);
    FLUID_ENFORCE(bucket[i] >= 0, "auc: Predict '", ctx.InputName("Predict"),
                  "' holds ", v, " at row ", i,
                  " as the probability of class 1, outside [0, 1]");
    FLUID_ENFORCE(label[i] == 0 || label[i] == 1, "auc: Label '",
                  ctx.InputName("Label"), "' holds ", label[i], " at row ", i,
                  "; labels must be 0 or 1");
  }
  return bucket;
}

template <typename T>
void AucKernel(const ExecutionContext& ctx) {
  const int64_t nt = ctx.Attr<int32_t>("num_thresholds");
  const int32_t steps = ctx.Attr<int32_t>("slide_steps");
  const int64_t rows = AucStatRows(steps), buckets = nt + 1;
  const std::vector<int64_t> bucket = Buckets<T>(ctx, nt);
  const int64_t* label = ctx.Input("Label").data<int64_t>();
  int64_t* pos = StatOutput(ctx, "StatPos", "StatPosOut");
  int64_t* neg = StatOutput(ctx, "StatNeg", "StatNegOut");
  if (steps > 0) {
    ShiftWindow(pos, rows, buckets);
    ShiftWindow(neg, rows, buckets);
  }
  int64_t* last_pos = pos + (rows - 1) * buckets;
  int64_t* last_neg = neg + (rows - 1) * buckets;
  for (size_t i = 0; i < bucket.size(); ++i)
    ++(label[i] == 1 ? last_pos : last_neg)[bucket[i]];
  *ctx.Output("AUC")->mutable_data<double>(Shape{1}) =
      AucArea(pos, neg, rows, buckets);
}

}  // namespace

REGISTER_OP(auc)
    .Doc(
        "The area under the ROC curve of Predict's probability of class 1 "
        "against Label, over the histograms StatPos and StatNeg, which "
        "count each batch in place and persist across runs.")
    .Input("Predict",
           "[N, 2] or [N, 1] probabilities in [0, 1]; the last column is the "
           "probability of class 1")
    .Input("Label", "[N, 1] int64 labels, 0 or 1")
    .Input("StatPos",
           "[max(slide_steps, 1), num_thresholds + 1] int64: rows labelled 1 "
           "per bucket")
    .Input("StatNeg", "the same for the rows labelled 0")
    .Output("AUC", "[1] float64, the area over the histograms' rows")
    .Output("StatPosOut", "StatPos with this batch counted; normally StatPos")
    .Output("StatNegOut", "StatNeg with this batch counted; normally StatNeg")
    .Attr<std::string>("curve", "ROC", "the curve whose area is taken")
    .OneOf({"ROC"})
    .Attr<int32_t>("num_thresholds", 4095,
                   "a prediction p falls in bucket floor(p * num_thresholds) "
                   "of num_thresholds + 1")
    .InRange(1, 1 << 24)
    .Attr<int32_t>("slide_steps", 1,
                   "0: every batch accumulated in one row; k >= 1: the last k "
                   "batches, one row each")
    .InRange(0, kNoUpperBound)
    .Attr<bool>("is_test", false,
                "set by clone(for_test=True), which keeps the op; it counts "
                "the same either way")
    .KernelDtypeFrom("Predict")
    .SetInferShape(AucInferShape)
    .CPUKernel<float>(AucKernel<float>)
    .CPUKernel<double>(AucKernel<double>);

}  // namespace ops
}  // namespace fluid
