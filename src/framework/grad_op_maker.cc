#include "src/framework/grad_op_maker.h"

namespace fluid {

proto::OpDesc MakeGradOp(const proto::OpDesc& fwd,
                         const std::string& grad_type,
                         const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs,
                         const std::vector<std::string>& out_grads,
                         const std::vector<std::string>& in_grads) {
  proto::OpDesc g;
  g.set_type(grad_type);
  for (const auto& slot : inputs) SetOpInput(&g, slot, OpInput(fwd, slot));
  for (const auto& slot : outputs) SetOpInput(&g, slot, OpOutput(fwd, slot));
  for (const auto& slot : out_grads) {
    std::vector<std::string> names;
    for (const auto& n : OpOutput(fwd, slot)) names.push_back(GradVarName(n));
    SetOpInput(&g, GradSlot(slot), names);
  }
  for (const auto& slot : in_grads) {
    std::vector<std::string> names;
    for (const auto& n : OpInput(fwd, slot)) names.push_back(GradVarName(n));
    SetOpOutput(&g, GradSlot(slot), names);
  }
  for (const auto& a : fwd.attrs()) *g.add_attrs() = a;
  SetOpAttr(&g, kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward));
  return g;
}

GradMakerFn DefaultGradMaker(const std::string& grad_type,
                             const std::vector<std::string>& inputs,
                             const std::vector<std::string>& outputs,
                             const std::vector<std::string>& out_grads,
                             const std::vector<std::string>& in_grads) {
  return [=](const proto::OpDesc& fwd) {
    return std::vector<proto::OpDesc>{
        MakeGradOp(fwd, grad_type, inputs, outputs, out_grads, in_grads)};
  };
}

}  // namespace fluid
