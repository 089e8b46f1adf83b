#include "src/framework/liveness.h"

#include <cerrno>
#include <cstdlib>
#include <map>

#include "src/framework/enforce.h"
#include "src/framework/program_desc.h"
#include "src/framework/shape_only_inputs.h"
#include "src/framework/types.h"

namespace fluid {

namespace {

// The vars op `op` uses: its inputs, outputs and op_skip_if variable;
// with `values_only`, not the inputs it reads the shape of only
// (shape_only_inputs.h), which a freed var still has.
std::vector<std::string> UsedVars(const proto::OpDesc& op,
                                  bool values_only = false) {
  std::vector<std::string> used;
  for (const auto& slot : op.inputs())
    if (!values_only || !ReadsShapeOnly(op, slot.parameter()))
      used.insert(used.end(), slot.arguments().begin(), slot.arguments().end());
  for (auto& n : OpOutputNames(op)) used.push_back(std::move(n));
  if (HasOpAttr(op, kOpSkipIfAttr))
    used.push_back(GetOpAttrAs<std::string>(op, kOpSkipIfAttr));
  return used;
}

bool IsHandle(const proto::BlockDesc& block, const std::string& name) {
  const proto::VarDesc* v = FindVarDesc(block, name);
  return v != nullptr && v->type() == proto::VarDesc::COMM_HANDLE;
}

// The vars that hold memory and may be released: not persistable, a
// tensor or sparse rows, written before they are read, not coalesced.
std::set<std::string> Candidates(const proto::BlockDesc& block,
                                 const std::set<std::string>& keep) {
  std::set<std::string> out, written, read_first;
  for (const auto& op : block.ops()) {
    for (const auto& n : OpInputNames(op))
      if (!written.count(n)) read_first.insert(n);
    if (HasOpAttr(op, kOpSkipIfAttr)) {
      const std::string n = GetOpAttrAs<std::string>(op, kOpSkipIfAttr);
      if (!written.count(n)) read_first.insert(n);
    }
    for (const auto& n : OpOutputNames(op)) written.insert(n);
  }
  std::set<std::string> coalesced;
  for (const auto& op : block.ops()) {
    if (op.type() != "coalesce_tensor") continue;
    for (const auto& n : OpOutputNames(op)) coalesced.insert(n);
  }
  for (const auto& v : block.vars()) {
    const std::string& n = v.name();
    if (v.persistable() || v.type() == proto::VarDesc::COMM_HANDLE) continue;
    if (!written.count(n) || read_first.count(n) || keep.count(n)) continue;
    if (coalesced.count(n) || n == kEmptyVarName) continue;
    out.insert(n);
  }
  return out;
}

// Extends `last` over the waits of asynchronous collectives: the vars of an
// op that leaves a collective in flight on a handle are in use until the
// last op reading that handle; forever (`never`) when none does.
void ExtendOverWaits(const proto::BlockDesc& block,
                     std::map<std::string, int>* last,
                     std::set<std::string>* never) {
  std::map<std::string, int> handle_last;  // handle -> last op reading it
  for (int i = 0; i < block.ops_size(); ++i)
    for (const auto& n : OpInputNames(block.ops(i)))
      if (IsHandle(block, n)) handle_last[n] = i;
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    for (const auto& h : OpOutputNames(op)) {
      if (!IsHandle(block, h)) continue;
      auto wait = handle_last.find(h);
      for (const auto& n : UsedVars(op)) {
        if (IsHandle(block, n)) continue;
        if (wait == handle_last.end() || wait->second < i) {
          never->insert(n);
        } else {
          int& l = (*last)[n];
          l = std::max(l, wait->second);
        }
      }
    }
  }
}

// shard_view's Out is a view of X: both live as long as either is used.
void JoinViews(const proto::BlockDesc& block,
               std::map<std::string, int>* last) {
  for (const auto& op : block.ops()) {
    if (op.type() != "shard_view") continue;
    const std::vector<std::string> x = OpInput(op, "X");
    const std::vector<std::string> out = OpOutput(op, "Out");
    if (x.empty() || out.empty()) continue;
    const int both = std::max((*last)[x[0]], (*last)[out[0]]);
    (*last)[x[0]] = both;
    (*last)[out[0]] = both;
  }
}

}  // namespace

std::vector<std::vector<std::string>> ReleaseSchedule(
    const proto::BlockDesc& block, const std::set<std::string>& keep) {
  std::vector<std::vector<std::string>> after(block.ops_size());
  const std::set<std::string> candidates = Candidates(block, keep);
  std::map<std::string, int> last;
  for (int i = 0; i < block.ops_size(); ++i)
    for (const auto& n : UsedVars(block.ops(i), true)) last[n] = i;
  std::set<std::string> never;
  ExtendOverWaits(block, &last, &never);
  // Twice: a view of a view settles in two rounds (views are rare and
  // shallow: shard_view of a gathered buffer).
  JoinViews(block, &last);
  JoinViews(block, &last);
  for (const auto& name : candidates) {
    auto it = last.find(name);
    if (it == last.end() || never.count(name)) continue;
    after[it->second].push_back(name);
  }
  return after;
}

bool EagerDeletionByDefault() {
  static const bool on = [] {
    const char* flag = std::getenv("FLAGS_eager_delete_tensor_gb");
    if (flag == nullptr || *flag == '\0') return true;
    char* end = nullptr;
    errno = 0;
    const double gb = std::strtod(flag, &end);
    FLUID_ENFORCE(errno == 0 && end != flag && *end == '\0',
                  "FLAGS_eager_delete_tensor_gb must be a number of GB (>= 0: "
                  "free temporaries after their last use; negative: keep "
                  "them), got '",
                  flag, "'");
    return gb >= 0;
  }();
  return on;
}

}  // namespace fluid
