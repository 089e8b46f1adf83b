#include "src/framework/prune.h"

#include <set>

#include "src/framework/backward.h"
#include "src/framework/enforce.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"

namespace fluid {

namespace {

constexpr const char* kIsTest = "is_test";

// Marks, walking block 0 backwards from the targets, the ops whose outputs
// are needed; a fed var is not traced further.
std::vector<bool> NeededOps(const proto::BlockDesc& block,
                            const std::set<std::string>& feeds,
                            const std::vector<std::string>& targets) {
  std::set<std::string> needed(targets.begin(), targets.end());
  for (const auto& f : feeds) needed.erase(f);
  std::vector<bool> keep(block.ops_size(), false);
  for (int i = block.ops_size() - 1; i >= 0; --i) {
    const proto::OpDesc& op = block.ops(i);
    if (IsTrainingOnlyOp(op, block)) continue;
    bool wanted = false;
    for (const auto& out : OpOutputNames(op)) wanted |= needed.count(out) > 0;
    if (!wanted) continue;
    keep[i] = true;
    for (const auto& out : OpOutputNames(op)) needed.erase(out);
    for (const auto& in : OpInputNames(op))
      if (!feeds.count(in)) needed.insert(in);
  }
  return keep;
}

// Every input of a kept op is fed, computed by a kept op before it, or
// persistable (a parameter); a missing one is named with the op that reads
// it.
void CheckInputsAvailable(const proto::BlockDesc& kept,
                          const proto::BlockDesc& src,
                          const std::set<std::string>& produced) {
  for (const proto::OpDesc& op : kept.ops()) {
    for (const auto& in : OpInputNames(op)) {
      const proto::VarDesc* v = FindVarDesc(src, in);
      FLUID_ENFORCE(produced.count(in) || (v != nullptr && v->persistable()),
                    "Prune: op '", op.type(), "' needs var '", in,
                    "', which is neither fed nor computed from the feeds; "
                    "add it to the feeds or choose other targets");
    }
  }
}

}  // namespace

bool HasTestMode(const proto::OpDesc& op) {
  if (HasOpAttr(op, kIsTest)) return true;
  if (!OpRegistry::Global().Has(op.type())) return false;
  for (const AttrSpec& a : OpRegistry::Global().Get(op.type()).attrs())
    if (a.name == kIsTest) return true;
  return false;
}

void SetIsTest(proto::ProgramDesc* program) {
  FLUID_ENFORCE(program != nullptr, "SetIsTest: null program");
  for (auto& block : *program->mutable_blocks()) {
    for (auto& op : *block.mutable_ops()) {
      if (HasTestMode(op)) SetOpAttr(&op, kIsTest, Attribute(true));
    }
  }
}

proto::ProgramDesc Prune(const proto::ProgramDesc& program,
                         const std::vector<std::string>& feeds,
                         const std::vector<std::string>& targets) {
  FLUID_ENFORCE(program.blocks_size() > 0, "Prune: the program has no blocks");
  FLUID_ENFORCE(!targets.empty(), "Prune: no target vars");
  proto::ProgramDesc switched = program;
  SetIsTest(&switched);
  const proto::BlockDesc& src = switched.blocks(0);
  for (const auto& n : feeds)
    FLUID_ENFORCE(FindVarDesc(src, n) != nullptr, "Prune: feed var '", n,
                  "' is not a var of the program");
  const std::set<std::string> fed(feeds.begin(), feeds.end());
  const std::vector<bool> keep = NeededOps(src, fed, targets);

  proto::ProgramDesc out = switched;
  out.clear_distribution();
  out.clear_nranks();
  out.clear_structure_hash();
  proto::BlockDesc* block = out.mutable_blocks(0);
  block->clear_ops();
  std::set<std::string> used(fed.begin(), fed.end());
  std::set<std::string> produced(fed.begin(), fed.end());
  for (int i = 0; i < src.ops_size(); ++i) {
    if (!keep[i]) continue;
    *block->add_ops() = src.ops(i);
    for (const auto& n : OpInputNames(src.ops(i))) used.insert(n);
    for (const auto& n : OpOutputNames(src.ops(i))) {
      used.insert(n);
      produced.insert(n);
    }
  }
  for (const auto& t : targets) {
    const proto::VarDesc* v = FindVarDesc(src, t);
    FLUID_ENFORCE(v != nullptr, "Prune: target var '", t,
                  "' is not a var of the program");
    FLUID_ENFORCE(produced.count(t) || v->persistable(), "Prune: target var '",
                  t, "' is computed by no forward op of the program");
    used.insert(t);
  }
  CheckInputsAvailable(*block, src, produced);
  block->clear_vars();
  for (const auto& v : src.vars())
    if (used.count(v.name())) *block->add_vars() = v;
  return out;
}

}  // namespace fluid
