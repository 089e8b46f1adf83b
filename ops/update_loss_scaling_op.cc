// update_loss_scaling: the second half of dynamic loss scaling (fp16
// training), after check_finite_and_unscale. From FoundInfinite (int32 [1],
// 1 when the step's gradients hold an Inf or a NaN; Fluid's is bool) it
// moves the loss scaling and its two counters one step through the state
// machine of NextLossScaling (ops/loss_scaling.h): raised by incr_ratio
// after incr_every_n_steps finite steps in a row, lowered by decr_ratio
// (never below 1) after decr_every_n_nan_or_inf steps in a row with an Inf
// or a NaN. On such a step the gradients are zeroed (Out = 0, so the
// optimizer's step does not move the parameters by them); otherwise
// Out = X. LossScaling, OutGoodSteps and OutBadSteps are usually
// PrevLossScaling, InGoodSteps and InBadSteps themselves (persistable
// state, in place), and Out is usually X. Not differentiable.
#include <cstring>
#include <string>

#include "ops/loss_scaling.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

LossScalingAttrs CheckLossScalingAttrs(const AttributeMap& attrs,
                                       const std::string& op_type) {
  LossScalingAttrs a;
  // The counts' ranges are checked with the schema (InRange).
  a.incr_every_n_steps = GetAttr<int32_t>(attrs, "incr_every_n_steps", op_type);
  a.decr_every_n_nan_or_inf =
      GetAttr<int32_t>(attrs, "decr_every_n_nan_or_inf", op_type);
  a.incr_ratio = GetAttr<float>(attrs, "incr_ratio", op_type);
  a.decr_ratio = GetAttr<float>(attrs, "decr_ratio", op_type);
  // Written so that NaN fails too.
  FLUID_ENFORCE(a.incr_ratio > 1.0f, op_type, ": attr incr_ratio is ",
                a.incr_ratio,
                "; it must be > 1 (the factor that raises the loss scaling)");
  FLUID_ENFORCE(a.decr_ratio > 0.0f && a.decr_ratio < 1.0f, op_type,
                ": attr decr_ratio is ", a.decr_ratio,
                "; it must lie in (0, 1) (the factor that lowers the loss "
                "scaling)");
  return a;
}

namespace {

template <typename S>
void StepLossScaling(const ExecutionContext& ctx, bool found_infinite,
                     const LossScalingAttrs& a) {
  const LossScalingState<S> next = NextLossScaling<S>(
      found_infinite, ctx.Input("PrevLossScaling").data<S>()[0],
      ctx.Input("InGoodSteps").data<int32_t>()[0],
      ctx.Input("InBadSteps").data<int32_t>()[0], a);
  ctx.Output("LossScaling")->mutable_data<S>(Shape{1})[0] = next.scaling;
  ctx.Output("OutGoodSteps")->mutable_data<int32_t>(Shape{1})[0] =
      next.good_steps;
  ctx.Output("OutBadSteps")->mutable_data<int32_t>(Shape{1})[0] =
      next.bad_steps;
}

// One kernel for every dtype of X[0]: Out is a copy of X's bits or zero
// bits (+0 in every float dtype), whatever X's dtype.
void UpdateLossScalingKernel(const ExecutionContext& ctx) {
  const LossScalingAttrs a =
      CheckLossScalingAttrs(ctx.op().attrs(), ctx.type());
  const bool found = ctx.Input("FoundInfinite").data<int32_t>()[0] != 0;
  if (ctx.Input("PrevLossScaling").dtype() == DataType::kFloat64) {
    StepLossScaling<double>(ctx, found, a);
  } else {
    StepLossScaling<float>(ctx, found, a);
  }
  for (const GradPair& p : LossScalingGrads(ctx)) {
    const size_t bytes = p.x->bytes();
    if (bytes == 0 || (p.in_place && !found)) continue;
    void* out = p.out->raw_mutable_data(ctx.place());
    if (found) {
      std::memset(out, 0, bytes);
    } else {
      std::memcpy(out, p.x->raw_data(), bytes);
    }
  }
}

void UpdateLossScalingInferShape(InferShapeContext* ctx) {
  CheckLossScalingAttrs(ctx->attrs(), ctx->op_type());
  InferLossScalingGrads(ctx);
  CheckLossScalingScalar(ctx, "FoundInfinite", false);
  CheckLossScalingScalar(ctx, "PrevLossScaling", true);
  CheckLossScalingScalar(ctx, "InGoodSteps", false);
  CheckLossScalingScalar(ctx, "InBadSteps", false);
  ctx->ShareShape("PrevLossScaling", "LossScaling");
  ctx->ShareShape("InGoodSteps", "OutGoodSteps");
  ctx->ShareShape("InBadSteps", "OutBadSteps");
}

}  // namespace

REGISTER_OP(update_loss_scaling)
    .Doc(
        "One step of dynamic loss scaling: the loss scaling and its "
        "counters move on from FoundInfinite; Out = X, or zeros on a step "
        "whose gradients hold an Inf or a NaN. Not differentiable.")
    .DuplicableInput("X",
                     "the gradients, dense or sparse rows, each float32, "
                     "float64, float16 or bfloat16")
    .Input("FoundInfinite",
           "int32 [1]: 1 when the step's gradients hold an Inf or a NaN "
           "(check_finite_and_unscale's; Fluid's is bool)")
    .Input("PrevLossScaling",
           "the loss scaling, one element, float32 or "
           "float64")
    .Input("InGoodSteps", "int32 [1]: finite steps in a row so far")
    .Input("InBadSteps",
           "int32 [1]: steps with an Inf or a NaN in a row so far")
    .DuplicableOutput("Out",
                      "X, or zeros of X's shape on a step with an Inf or a "
                      "NaN; usually X itself (in place)")
    .Output("LossScaling", "the next loss scaling; usually PrevLossScaling")
    .Output("OutGoodSteps", "int32 [1]; usually InGoodSteps")
    .Output("OutBadSteps", "int32 [1]; usually InBadSteps")
    .Attr<int32_t>("incr_every_n_steps", 1000,
                   "finite steps in a row that multiply the loss scaling by "
                   "incr_ratio")
    .InRange(1, kNoUpperBound)
    .Attr<int32_t>("decr_every_n_nan_or_inf", 2,
                   "steps in a row with an Inf or a NaN that multiply the "
                   "loss scaling by decr_ratio")
    .InRange(1, kNoUpperBound)
    .Attr<float>("incr_ratio", 2.0f,
                 "> 1: the factor that raises the loss scaling (kept when "
                 "the product is not finite)")
    .Attr<float>("decr_ratio", 0.8f,
                 "in (0, 1): the factor that lowers the loss scaling (never "
                 "below 1)")
    .SetInferShape(UpdateLossScalingInferShape)
    .CPUKernel<float>(UpdateLossScalingKernel)
    .CPUKernel<double>(UpdateLossScalingKernel)
    .CPUKernel<float16>(UpdateLossScalingKernel)
    .CPUKernel<bfloat16>(UpdateLossScalingKernel);

}  // namespace ops
}  // namespace fluid
