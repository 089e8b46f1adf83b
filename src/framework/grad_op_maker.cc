#include "src/framework/grad_op_maker.h"

namespace fluid {

proto::OpDesc MakeGradOp(const proto::OpDesc& fwd, const GradSpec& spec) {
  proto::OpDesc g;
  g.set_type(spec.type);
  for (const auto& slot : spec.inputs) SetOpInput(&g, slot, OpInput(fwd, slot));
  for (const auto& slot : spec.outputs)
    SetOpInput(&g, slot, OpOutput(fwd, slot));
  for (const auto& slot : spec.out_grads) {
    std::vector<std::string> names;
    for (const auto& n : OpOutput(fwd, slot)) names.push_back(GradVarName(n));
    SetOpInput(&g, GradSlot(slot), names);
  }
  for (const auto& slot : spec.in_grads) {
    std::vector<std::string> names;
    for (const auto& n : OpInput(fwd, slot)) names.push_back(GradVarName(n));
    SetOpOutput(&g, GradSlot(slot), names);
  }
  for (const auto& a : fwd.attrs()) *g.add_attrs() = a;
  SetOpAttr(&g, kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward));
  return g;
}

}  // namespace fluid
