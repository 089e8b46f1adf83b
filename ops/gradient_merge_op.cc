// The two small ops of gradient merge (transpiler/gradient_merge.h), both
// on one-element tensors, wherever they live (a device tensor is read and
// written through the host: a few bytes once per run).
//
// gradient_merge_step, first op of the program: Step (int64, persistable)
// counts the micro-steps accumulated in the current merged step. With
// count = Step + 1:
//   SkipUpdate = count < k_steps          (int32: this run only accumulates)
//   SkipStart  = count != 1               (int32: this run opens no merged
//                                          step; guards the learning-rate
//                                          schedule's counter)
//   Scale      = avg ? 1 / count : 1      (float32: what the accumulated
//                                          gradient is multiplied by)
//   StepOut    = SkipUpdate ? count : 0   (normally Step itself)
//   FoundInfinite (optional) = 0          (fp16: the flag the executors
//                                          read; only a merged step sets it)
// A count past k_steps (a checkpoint written under a larger k_steps) closes
// the merged step at once, averaged over the micro-steps it holds.
//
// gradient_merge_skip: Out = SkipUpdate || FoundInfinite (int32), the flag
// that an update skips on under fp16: neither merged nor finite.
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

// The first element of a one-element tensor of type T, read on the host.
template <typename T>
T ReadScalar(const ExecutionContext& ctx, const std::string& slot) {
  const Tensor& t = ctx.Input(slot);
  FLUID_ENFORCE(t.initialized() && t.numel() == 1, ctx.type(), ": ", slot, " '",
                ctx.InputName(slot),
                "' must hold one element (initialised by the startup "
                "program), has shape ",
                t.shape());
  if (t.place().is_cpu()) return t.data<T>()[0];
  Tensor host;
  host.CopyFrom(t, Place::CPU());
  return host.data<T>()[0];
}

// Writes a one-element tensor of type T at the run's place.
template <typename T>
void WriteScalar(const ExecutionContext& ctx, const std::string& slot,
                 T value) {
  Tensor host;
  host.mutable_data<T>(Shape{1})[0] = value;
  ctx.Output(slot)->CopyFrom(host, ctx.place());
}

void GradientMergeStepKernel(const ExecutionContext& ctx) {
  const int64_t k = ctx.Attr<int32_t>("k_steps");
  const int64_t step = ReadScalar<int64_t>(ctx, "Step");
  FLUID_ENFORCE(step >= 0, ctx.type(), ": Step '", ctx.InputName("Step"),
                "' holds ", step, "; a count of micro-steps is never negative");
  const int64_t count = step + 1;
  const bool skip = count < k;
  WriteScalar<int32_t>(ctx, "SkipUpdate", skip ? 1 : 0);
  WriteScalar<int32_t>(ctx, "SkipStart", count == 1 ? 0 : 1);
  WriteScalar<float>(
      ctx, "Scale",
      ctx.Attr<bool>("avg") ? 1.0f / static_cast<float>(count) : 1.0f);
  WriteScalar<int64_t>(ctx, "StepOut", skip ? count : 0);
  if (ctx.HasOutput("FoundInfinite"))
    WriteScalar<int32_t>(ctx, "FoundInfinite", 0);
}

void GradientMergeSkipKernel(const ExecutionContext& ctx) {
  const bool skip = ReadScalar<int32_t>(ctx, "SkipUpdate") != 0 ||
                    ReadScalar<int32_t>(ctx, "FoundInfinite") != 0;
  WriteScalar<int32_t>(ctx, "Out", skip ? 1 : 0);
}

void ScalarShape(InferShapeContext* ctx, const std::string& slot,
                 DataType dtype) {
  if (!ctx->HasOutput(slot)) return;
  ctx->SetOutputShape(slot, Shape{1});
  ctx->SetOutputDtype(slot, dtype);
}

}  // namespace

REGISTER_OP(gradient_merge_step)
    .Doc(
        "Counts one micro-step of gradient merge and says whether this run "
        "closes a merged step.")
    .Input("Step", "int64 [1]: micro-steps accumulated so far")
    .Output("StepOut", "int64 [1]: the new count (0 after a merged step)")
    .Output("SkipUpdate", "int32 [1]: 1 unless this run closes a merged step")
    .Output("SkipStart", "int32 [1]: 1 unless this run opens a merged step")
    .Output("Scale", "float32 [1]: 1/count with avg, else 1")
    .OptionalOutput("FoundInfinite", "int32 [1]: reset to 0 (fp16)")
    .Attr<int32_t>("k_steps", 1, "micro-steps per merged step")
    .InRange(1, kNoUpperBound)
    .Attr<bool>("avg", true, "average the merged gradient over its micro-steps")
    .SetInferShape([](InferShapeContext* ctx) {
      ScalarShape(ctx, "StepOut", DataType::kInt64);
      ScalarShape(ctx, "SkipUpdate", DataType::kInt32);
      ScalarShape(ctx, "SkipStart", DataType::kInt32);
      ScalarShape(ctx, "Scale", DataType::kFloat32);
      ScalarShape(ctx, "FoundInfinite", DataType::kInt32);
    })
    .AnyPlaceKernel(GradientMergeStepKernel);

REGISTER_OP(gradient_merge_skip)
    .Doc("Out = SkipUpdate || FoundInfinite: an fp16 update's skip flag.")
    .Input("SkipUpdate", "int32 [1]: gradient_merge_step's")
    .Input("FoundInfinite", "int32 [1]: check_finite_and_unscale's")
    .Output("Out", "int32 [1]")
    .SetInferShape([](InferShapeContext* ctx) {
      ScalarShape(ctx, "Out", DataType::kInt32);
    })
    .AnyPlaceKernel(GradientMergeSkipKernel);

}  // namespace ops
}  // namespace fluid
