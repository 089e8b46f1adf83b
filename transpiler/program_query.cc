#include "transpiler/program_query.h"

#include <set>

#include "src/framework/program_desc.h"

namespace fluid {

bool HasRole(const proto::OpDesc& op, OpRole role) {
  return (OpRoleOf(op) & static_cast<int>(role)) != 0;
}

proto::OpDesc WithRole(proto::OpDesc op, OpRole role) {
  SetOpAttr(&op, kOpRoleAttr, static_cast<int>(role));
  return op;
}

bool ReadsVar(const proto::OpDesc& op, const std::string& var) {
  for (const auto& n : OpInputNames(op))
    if (n == var) return true;
  return false;
}

bool WritesVar(const proto::OpDesc& op, const std::string& var) {
  for (const auto& n : OpOutputNames(op))
    if (n == var) return true;
  return false;
}

bool IsUpdateOp(const proto::OpDesc& op) {
  return HasRole(op, OpRole::kOptimize) && OpRoleVarOf(op).size() == 2;
}

std::map<std::string, int> UpdateOps(const proto::BlockDesc& block) {
  std::map<std::string, int> at;
  for (int i = 0; i < block.ops_size(); ++i)
    if (IsUpdateOp(block.ops(i))) at.emplace(OpRoleVarOf(block.ops(i))[0], i);
  return at;
}

SlotKind KindOf(const proto::BlockDesc& block, const proto::OpDesc& op,
                const std::string& slot) {
  if (slot == "Param" || slot == "ParamOut") return SlotKind::kParam;
  if (slot == "Grad") return SlotKind::kGrad;
  const std::string in =
      slot.size() > 3 && slot.substr(slot.size() - 3) == "Out"
          ? slot.substr(0, slot.size() - 3)
          : slot;
  const std::vector<std::string> vars = OpInput(op, in);
  const std::string param = OpInput(op, "Param")[0];
  if (vars.size() == 1 && OpOutput(op, in + "Out") == vars &&
      VarShape(GetVarDesc(block, vars[0])).numel() ==
          VarShape(GetVarDesc(block, param)).numel())
    return SlotKind::kState;
  return SlotKind::kScalar;
}

int LastBackwardWrite(const proto::BlockDesc& block, const std::string& var) {
  int last = -1;
  for (int i = 0; i < block.ops_size(); ++i)
    if (HasRole(block.ops(i), OpRole::kBackward) &&
        WritesVar(block.ops(i), var))
      last = i;
  return last;
}

int FirstOptimizeRead(const proto::BlockDesc& block, const std::string& var) {
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (!HasRole(op, OpRole::kBackward) && !HasRole(op, OpRole::kCollective) &&
        ReadsVar(op, var))
      return i;
  }
  return block.ops_size();
}

std::string TypeAt(const proto::BlockDesc& block, int i) {
  return i < block.ops_size() ? block.ops(i).type() : std::string("end");
}

std::vector<std::pair<std::string, std::string>> OptimizedParams(
    const proto::ProgramDesc& main) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::set<std::string> seen;
  for (const auto& op : main.blocks(0).ops()) {
    if (!HasRole(op, OpRole::kOptimize)) continue;
    std::vector<std::string> rv = OpRoleVarOf(op);
    if (rv.size() != 2) continue;
    if (seen.insert(rv[1]).second) pairs.emplace_back(rv[0], rv[1]);
  }
  return pairs;
}

std::string FirstSparseGradient(const proto::ProgramDesc& main) {
  const proto::BlockDesc& block = main.blocks(0);
  for (const auto& pg : OptimizedParams(main)) {
    const proto::VarDesc* g = FindVarDesc(block, pg.second);
    if (g != nullptr && g->type() == proto::VarDesc::SELECTED_ROWS)
      return pg.second;
  }
  return "";
}

}  // namespace fluid
