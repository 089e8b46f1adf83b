// The host-side checks of the state optimizers (state_optimizer.h).
#include "ops/state_optimizer.h"

#include "src/framework/program_desc.h"

namespace fluid {
namespace ops {

StateOptimizerInputs ReadStateOptimizerInputs(const ExecutionContext& ctx,
                                              const char* const* slots,
                                              int num_states) {
  StateOptimizerInputs in;
  in.param = &ctx.Input("Param");
  in.grad = &ctx.Input("Grad");
  const int64_t n = in.param->numel();
  std::vector<std::string> names = {"Grad"};
  for (int k = 0; k < num_states; ++k) names.emplace_back(slots[k]);
  for (const std::string& slot : names) {
    const Tensor& t = ctx.Input(slot);
    FLUID_ENFORCE(t.numel() == n, ctx.type(), ": ", slot, " '",
                  ctx.InputName(slot), "' has shape ", t.shape(),
                  " but Param '", ctx.InputName("Param"), "' has shape ",
                  in.param->shape());
    if (slot != "Grad") in.states.push_back(&t);
  }
  return in;
}

namespace {

// `slot` must be shaped and typed like Param.
void CheckLikeParam(InferShapeContext* ctx, const std::string& slot) {
  Shape p = ctx->GetInputShape("Param");
  Shape s = ctx->GetInputShape(slot);
  FLUID_ENFORCE(ShapesCompatible(p, s), ctx->op_type(), ": ", slot, " '",
                ctx->InputName(slot), "' has shape ", s, " but Param '",
                ctx->InputName("Param"), "' has shape ", p);
  FLUID_ENFORCE(ctx->GetInputDtype(slot) == ctx->GetInputDtype("Param"),
                ctx->op_type(), ": ", slot, " '", ctx->InputName(slot), "' is ",
                DataTypeName(ctx->GetInputDtype(slot)), " but Param '",
                ctx->InputName("Param"), "' is ",
                DataTypeName(ctx->GetInputDtype("Param")));
}

void CheckOneElement(InferShapeContext* ctx, const std::string& slot) {
  const int64_t n = ctx->GetInputShape(slot).numel();
  FLUID_ENFORCE(n < 0 || n == 1, ctx->op_type(), ": ", slot, " '",
                ctx->InputName(slot), "' must hold one element, has shape ",
                ctx->GetInputShape(slot));
}

}  // namespace

void StateOptimizerInferShape(InferShapeContext* ctx, const char* const* slots,
                              int num_states, bool uses_lr, const char* aux) {
  CheckLikeParam(ctx, "Grad");
  for (int k = 0; k < num_states; ++k) CheckLikeParam(ctx, slots[k]);
  if (uses_lr) CheckOneElement(ctx, "LearningRate");
  if (aux != nullptr) CheckOneElement(ctx, aux);
  ctx->ShareShape("Param", "ParamOut");
  for (int k = 0; k < num_states; ++k)
    ctx->ShareShape(slots[k], std::string(slots[k]) + "Out");
}

}  // namespace ops
}  // namespace fluid
