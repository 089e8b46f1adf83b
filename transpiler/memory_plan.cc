#include "transpiler/memory_plan.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "src/framework/enforce.h"
#include "src/framework/liveness.h"
#include "src/framework/program_desc.h"
#include "transpiler/control_flow_lint.h"
#include "transpiler/distributed_job.h"
#include "transpiler/local_rewrites.h"
#include "transpiler/program_query.h"
#include "transpiler/strategy.h"

namespace fluid {

namespace {

// What the plan knows of each var of the block.
struct VarInfo {
  int64_t bytes = 0;  // 0 for views, handles and unknown shapes
  std::string kind;   // as MemoryItem::kind; "" for a temporary not yet told
};

int64_t DeclaredBytes(const proto::VarDesc& v, int64_t batch_size) {
  if (v.type() == proto::VarDesc::COMM_HANDLE) return 0;
  Shape shape = VarShape(v);
  Shape known;
  for (int64_t d : shape) known.push_back(d < 0 ? batch_size : d);
  const std::string what = "variable " + Quote(v.name());
  return TensorBytes(known, VarDtype(v), what.c_str());
}

// Every var's bytes and kind. Views hold no bytes; a coalesced buffer holds
// its tensors' and takes their kind (parameters) or is a communication
// buffer (gradients).
std::map<std::string, VarInfo> ClassifyVars(const proto::BlockDesc& block,
                                            int64_t batch_size) {
  std::map<std::string, VarInfo> info;
  std::set<std::string> trainable, updated, state;
  // A pipeline stage's micro-batch k values ("x@MB<k>", see
  // transpiler/pipeline.h) hold batch / micro-batches rows.
  int64_t pieces = 1;
  for (const auto& v : block.vars()) {
    const size_t at = v.name().rfind("@MB");
    if (at == std::string::npos) continue;
    const std::string k = v.name().substr(at + 3);
    if (!k.empty() && k.size() < 6 &&
        std::all_of(k.begin(), k.end(), [](char c) { return std::isdigit(c); }))
      pieces = std::max<int64_t>(pieces, std::stoll(k) + 1);
  }
  for (const auto& v : block.vars()) {
    const bool piece = v.name().find("@MB") != std::string::npos;
    info[v.name()].bytes = DeclaredBytes(
        v, piece ? std::max<int64_t>(batch_size / pieces, 1) : batch_size);
    if (v.trainable()) trainable.insert(v.name());
  }
  for (const auto& op : block.ops()) {
    if (!IsUpdateOp(op)) continue;
    for (const auto& slot : op.inputs()) {
      const std::string& s = slot.parameter();
      // What an update writes in place: a parameter, or (stage 3) the
      // persistable shard of a bucket of them.
      if (s == "Param")
        updated.insert(slot.arguments().begin(), slot.arguments().end());
      if (s == "Param" || s == "LearningRate" || s == "Grad") continue;
      for (const auto& n : slot.arguments()) state.insert(n);
    }
  }
  for (const auto& v : block.vars()) {
    VarInfo& i = info[v.name()];
    if (!v.persistable()) continue;
    i.kind = trainable.count(v.name()) || updated.count(v.name())
                 ? "parameter"
                 : (state.count(v.name()) ? "optimizer state" : "state");
  }
  for (const auto& op : block.ops()) {
    if (op.type() == "shard_view")
      for (const auto& n : OpOutput(op, "Out")) info[n].bytes = 0;
    if (op.type() != "coalesce_tensor") continue;
    const std::vector<std::string> fused = OpOutput(op, "FusedOutput");
    const std::vector<std::string> members = OpOutput(op, "Output");
    if (fused.empty()) continue;
    VarInfo& buffer = info[fused[0]];
    const proto::VarDesc* desc = FindVarDesc(block, fused[0]);
    if (desc != nullptr && desc->persistable() && !members.empty()) {
      const std::string& kind = info[members[0]].kind;
      buffer.kind = kind.empty() ? "state" : kind;
    } else {
      buffer.kind = "communication buffer";
    }
    for (const auto& m : members) info[m].bytes = 0;
  }
  // Gradients of parameters (and their renamed partial sums).
  for (auto& [name, i] : info) {
    if (!i.kind.empty()) continue;
    const size_t at = name.find("@GRAD");
    i.kind = at != std::string::npos && trainable.count(name.substr(0, at))
                 ? "gradient"
                 : "activation";
  }
  return info;
}

// The vars MPIExecutor keeps after a run (the averaged gradients it scans
// for NaN); the executor's schedule leaves them, so does the plan.
std::set<std::string> KeptByTheRuntime(const proto::BlockDesc& block) {
  std::map<std::string, std::vector<std::string>> members;
  for (const auto& op : block.ops()) {
    if (op.type() != "coalesce_tensor") continue;
    const std::vector<std::string> fused = OpOutput(op, "FusedOutput");
    if (!fused.empty()) members[fused[0]] = OpOutput(op, "Output");
  }
  std::set<std::string> keep;
  for (const auto& op : block.ops()) {
    if (op.type() != "c_allreduce") continue;
    for (const auto& n : OpInput(op, "X")) {
      keep.insert(n);
      for (const auto& m : members[n]) keep.insert(m);
    }
  }
  return keep;
}

void AddItem(std::vector<MemoryItem>* items, const std::string& name,
             const VarInfo& i) {
  if (i.bytes > 0) items->push_back({name, i.kind, i.bytes});
}

// Adds `i`'s bytes to the part of `plan` its kind belongs to.
void Count(const VarInfo& i, MemoryPlan* plan) {
  if (i.kind == "parameter") {
    plan->parameters += i.bytes;
  } else if (i.kind == "optimizer state") {
    plan->optimizer_state += i.bytes;
  } else if (i.kind == "state") {
    plan->other_state += i.bytes;
  } else if (i.kind == "communication buffer") {
    plan->communication += i.bytes;
  } else {
    (i.kind == "gradient" ? plan->gradients : plan->activations) += i.bytes;
  }
}

// Adds the state and the temporaries that are never released to `plan`
// (and their items); returns the latter's bytes, live from the start.
int64_t CountHeld(const proto::BlockDesc& block,
                  const std::map<std::string, VarInfo>& info,
                  const std::set<std::string>& released, MemoryPlan* plan,
                  std::vector<MemoryItem>* items) {
  int64_t held_temporaries = 0;
  std::set<std::string> used;  // a temporary no op touches holds nothing
  for (const auto& op : block.ops()) {
    for (const auto& n : OpInputNames(op)) used.insert(n);
    for (const auto& n : OpOutputNames(op)) used.insert(n);
  }
  for (const auto& v : block.vars()) {
    const VarInfo& i = info.at(v.name());
    if (i.bytes == 0 || released.count(v.name())) continue;
    if (!v.persistable() && !used.count(v.name())) continue;
    AddItem(items, v.name(), i);
    Count(i, plan);
    if (!v.persistable() && i.kind != "communication buffer")
      held_temporaries += i.bytes;
  }
  return held_temporaries;
}

// Replays eager deletion over the ops: the peak of the released
// temporaries live at once (on top of `base`), its op and its items.
void ReplayTemporaries(const proto::BlockDesc& block,
                       const std::map<std::string, VarInfo>& info,
                       const std::vector<std::vector<std::string>>& schedule,
                       const std::set<std::string>& released, MemoryPlan* plan,
                       std::vector<MemoryItem>* items) {
  std::set<std::string> live;
  int64_t now = 0, peak = -1;
  std::set<std::string> at_peak;
  for (int i = 0; i < block.ops_size(); ++i) {
    for (const auto& n : OpOutputNames(block.ops(i)))
      if (released.count(n) && live.insert(n).second) now += info.at(n).bytes;
    if (now > peak) {
      peak = now;
      at_peak = live;
      plan->peak_op = i;
      plan->peak_op_type = block.ops(i).type();
    }
    for (const auto& n : schedule[i])
      if (live.erase(n)) now -= info.at(n).bytes;
    if (block.ops(i).type() != "delete_var") continue;
    for (const auto& n : OpInput(block.ops(i), "X"))
      if (live.erase(n)) now -= info.at(n).bytes;
  }
  for (const auto& n : at_peak) {
    AddItem(items, n, info.at(n));
    Count(info.at(n), plan);
  }
}

}  // namespace

MemoryPlan PlanProgramMemory(const proto::ProgramDesc& main, int64_t batch_size,
                             int nranks, bool eager_deletion) {
  FLUID_ENFORCE(batch_size >= 1, "memory plan: batch_size must be >= 1, got ",
                batch_size);
  FLUID_ENFORCE(main.blocks_size() > 0,
                "memory plan: the program has no block");
  const proto::BlockDesc& block = main.blocks(0);
  MemoryPlan plan;
  plan.nranks = nranks;
  plan.batch_size = batch_size;
  const std::map<std::string, VarInfo> info = ClassifyVars(block, batch_size);
  std::vector<std::vector<std::string>> schedule =
      ReleaseSchedule(block, KeptByTheRuntime(block));
  if (!eager_deletion)
    schedule.assign(schedule.size(), std::vector<std::string>());
  std::set<std::string> released;
  for (const auto& names : schedule)
    released.insert(names.begin(), names.end());
  // What delete_var frees (a sharded job's gathered parameters between
  // their forward and backward uses) lives from each write to its free.
  for (const auto& op : block.ops()) {
    if (op.type() != "delete_var") continue;
    for (const auto& n : OpInput(op, "X")) {
      const proto::VarDesc* v = FindVarDesc(block, n);
      if (v != nullptr && !v->persistable()) released.insert(n);
    }
  }
  std::vector<MemoryItem> items;
  CountHeld(block, info, released, &plan, &items);
  ReplayTemporaries(block, info, schedule, released, &plan, &items);
  plan.total = plan.parameters + plan.optimizer_state + plan.other_state +
               plan.communication + plan.gradients + plan.activations;
  std::stable_sort(items.begin(), items.end(),
                   [](const MemoryItem& a, const MemoryItem& b) {
                     return a.bytes > b.bytes;
                   });
  if (items.size() > 8) items.resize(8);
  plan.largest = items;
  return plan;
}

MemoryPlan PlanJobMemory(const proto::TrainingJob& job,
                         const proto::DistributedStrategy& strategy, int nranks,
                         int64_t batch_size) {
  FLUID_ENFORCE(nranks >= 1, "memory plan: nranks must be >= 1, got ", nranks);
  // A loop's step scopes hold its block's temporaries once per iteration,
  // a count known only at run time.
  RefuseSubBlocks(job.main(), "the memory plan",
                  "plan the job without the loop, or measure it");
  proto::DistributedStrategy run = job.strategy();
  run.MergeFrom(strategy);
  proto::TrainingJob prepared;
  if (nranks == 1 && FormOf(job.main()) == JobForm::kLocal) {
    prepared = LocalRewrites(job, CanonicalStrategy(run));
  } else {
    prepared = PrepareJob(job, run, nranks);
  }
  return PlanProgramMemory(prepared.main(), batch_size, nranks);
}

std::string FormatMiB(int64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof(s), "%.2f MiB", bytes / 1048576.0);
  return s;
}

std::string MemoryPlan::LargestItems(size_t n) const {
  std::ostringstream os;
  for (size_t i = 0; i < largest.size() && i < n; ++i)
    os << (i ? ", " : "") << largest[i].name << " (" << largest[i].kind << ") "
       << FormatMiB(largest[i].bytes);
  return os.str();
}

std::string MemoryPlan::ToString() const {
  std::ostringstream os;
  auto line = [&os](const char* what, int64_t bytes) {
    char s[96];
    std::snprintf(s, sizeof(s), "  %-34s %14s\n", what,
                  FormatMiB(bytes).c_str());
    os << s;
  };
  os << "memory plan per rank (" << nranks << " rank" << (nranks > 1 ? "s" : "")
     << ", batch " << batch_size << " per rank):\n";
  line("parameters", parameters);
  line("optimizer state", optimizer_state);
  line("other state", other_state);
  line("communication buffers (buckets)", communication);
  line("gradients (live at the peak)", gradients);
  line("activations (live at the peak)", activations);
  line("total", total);
  if (peak_op >= 0)
    os << "  the peak is after op #" << peak_op << " (" << peak_op_type
       << ")\n";
  os << "largest items:\n";
  for (const MemoryItem& item : largest) {
    char s[64];
    std::snprintf(s, sizeof(s), "%14s", FormatMiB(item.bytes).c_str());
    os << "  " << s << "  " << item.name << " (" << item.kind << ")\n";
  }
  return os.str();
}

int64_t ParseByteCount(const std::string& text, const std::string& what) {
  size_t digits = 0;
  while (digits < text.size() &&
         std::isdigit(static_cast<unsigned char>(text[digits])))
    ++digits;
  const std::string suffix = text.substr(digits);
  int shift = -1;
  if (suffix.empty() || suffix == "B") shift = 0;
  if (suffix == "K" || suffix == "k" || suffix == "KB" || suffix == "KiB")
    shift = 10;
  if (suffix == "M" || suffix == "m" || suffix == "MB" || suffix == "MiB")
    shift = 20;
  if (suffix == "G" || suffix == "g" || suffix == "GB" || suffix == "GiB")
    shift = 30;
  FLUID_ENFORCE(digits > 0 && digits <= 18 && shift >= 0, what,
                " must be a byte count: digits with an optional K, M or G "
                "suffix (e.g. 512M, 2G), got '",
                text, "'");
  const int64_t n = std::stoll(text.substr(0, digits));
  FLUID_ENFORCE(n > 0 && n <= (std::numeric_limits<int64_t>::max() >> shift),
                what, " must be positive and below 8 EiB, got '", text, "'");
  return n << shift;
}

}  // namespace fluid
