#include "transpiler/control_flow_lint.h"

#include <map>

#include "src/framework/program_desc.h"

namespace fluid {

namespace {

bool IsCollective(const proto::OpDesc& op) {
  return op.type().rfind("c_", 0) == 0;
}

// The ops that reduce a gradient across ranks; each names it as its X.
bool IsReduction(const proto::OpDesc& op) {
  return op.type() == "c_allreduce" || op.type() == "c_reducescatter" ||
         op.type() == "c_sparse_allreduce";
}

}  // namespace

bool HasControlFlow(const proto::ProgramDesc& program) {
  for (const auto& block : program.blocks())
    for (const auto& op : block.ops())
      if (HasOpAttr(op, "sub_block")) return true;
  return false;
}

void RefuseSubBlocks(const proto::ProgramDesc& program, const std::string& what,
                     const std::string& instead) {
  for (const auto& block : program.blocks()) {
    for (int i = 0; i < block.ops_size(); ++i) {
      const proto::OpDesc& op = block.ops(i);
      if (!HasOpAttr(op, "sub_block")) continue;
      FLUID_THROW(ErrorCode::kUnimplemented, what,
                  " does not rewrite programs with control flow: op #", i, " '",
                  op.type(), "' of block ", block.idx(), " runs block ",
                  GetOpAttrAs<int32_t>(op, "sub_block"), "; ", instead);
    }
  }
}

void LintControlFlow(const proto::ProgramDesc& main) {
  for (int b = 1; b < main.blocks_size(); ++b) {
    const proto::BlockDesc& block = main.blocks(b);
    for (int i = 0; i < block.ops_size(); ++i) {
      FLUID_ENFORCE(!IsCollective(block.ops(i)), "op #", i, " '",
                    block.ops(i).type(), "' of block ", b,
                    " communicates inside a loop's block; collectives run in "
                    "block 0 only (a loop's gradients are reduced once, after "
                    "while_grad)");
    }
  }
  if (main.blocks_size() < 2) return;
  std::map<std::string, int> reduced;
  const proto::BlockDesc& block = main.blocks(0);
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (!IsReduction(op)) continue;
    for (const auto& g : OpInput(op, "X")) {
      FLUID_ENFORCE(++reduced[g] == 1, "gradient '", g,
                    "' is reduced twice in block 0 (again by op #", i, " '",
                    op.type(), "'); a loop's gradient is reduced once");
    }
  }
}

}  // namespace fluid
