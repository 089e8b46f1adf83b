// The host-side checks of the state optimizers (state_optimizer.h).
#include "ops/state_optimizer.h"

#include "ops/op_helpers.h"
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

namespace {}  // namespace

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
