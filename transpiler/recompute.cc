#include "transpiler/recompute.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "src/framework/enforce.h"
#include "src/framework/op_registry.h"
#include "src/framework/operator.h"
#include "src/framework/program_desc.h"
#include "src/framework/shape_only_inputs.h"
#include "transpiler/program_query.h"

namespace fluid {

namespace {

bool IsForwardOp(const proto::OpDesc& op) {
  return !HasRole(op, OpRole::kBackward) && !HasRole(op, OpRole::kOptimize) &&
         !HasRole(op, OpRole::kCollective);
}

bool IsReplay(const proto::OpDesc& op) {
  return HasOpAttr(op, kRecomputeSegmentAttr);
}

std::string CopyOf(const std::string& var) { return var + kRecomputeSuffix; }

bool IsCopy(const std::string& name) {
  const std::string suffix = kRecomputeSuffix;
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool IsPersistable(const proto::BlockDesc& block, const std::string& name) {
  const proto::VarDesc* v = FindVarDesc(block, name);
  return v != nullptr && v->persistable();
}

// The index of the first op after the forward pass; it must begin the
// backward pass.
int ForwardEnd(const proto::BlockDesc& block) {
  int b = 0;
  while (b < block.ops_size() && IsForwardOp(block.ops(b))) ++b;
  FLUID_ENFORCE(
      b < block.ops_size() && HasRole(block.ops(b), OpRole::kBackward),
      "recompute: the program has no backward pass after its "
      "forward ops; rewrite a training program (after minimize)");
  return b;
}

void CheckOneBlock(const proto::ProgramDesc& main) {
  FLUID_ENFORCE_CODE(main.blocks_size() == 1, ErrorCode::kUnimplemented,
                     "recompute rewrites one-block programs; main has ",
                     main.blocks_size(), " blocks");
}

// Ops that draw random numbers from a state of their own: run twice, they
// draw other numbers (dropout's mask is a function of its counter instead).
bool IsRandomOp(const std::string& type) {
  static const std::set<std::string> kRandom = {
      "uniform_random",
      "gaussian_random",
      "truncated_gaussian_random",
      "uniform_random_batch_size_like",
      "gaussian_random_batch_size_like",
      "sampling_id",
      "random_crop",
      "randint",
      "randperm"};
  return kRandom.count(type) != 0;
}

// Whether a copy of `op` run in the backward pass computes what `op`
// computed: not a collective or a random op, and it writes no persistable
// variable but batch_norm's running statistics and dropout's counter
// advanced in place (which the replay leaves alone).
bool Replayable(const proto::BlockDesc& block, const proto::OpDesc& op) {
  const std::string& t = op.type();
  if (t.rfind("c_", 0) == 0 || t == "send" || t == "recv" || IsRandomOp(t))
    return false;
  if (t == "dropout") {
    const std::vector<std::string> step = OpInput(op, "Step");
    const std::vector<std::string> out = OpOutput(op, "StepOut");
    if (!step.empty() && out != step) return false;
  }
  for (const auto& slot : op.outputs()) {
    const std::string& s = slot.parameter();
    if (t == "batch_norm" && (s == "MeanOut" || s == "VarianceOut")) continue;
    if (t == "dropout" && s == "StepOut") continue;
    for (const auto& n : slot.arguments())
      if (IsPersistable(block, n)) return false;
  }
  return true;
}

// The forward pass cut at the checkpoints.
struct Segments {
  int forward_end = 0;
  std::vector<std::string> checkpoints;
  // Segment s is the forward ops (ends[s - 1], ends[s]]; the ops after
  // ends.back() are the tail.
  std::vector<int> ends;
  std::map<std::string, int> intermediates;  // var -> its segment

  int SegmentOf(int op) const {
    const auto it = std::lower_bound(ends.begin(), ends.end(), op);
    return it == ends.end() ? -1 : static_cast<int>(it - ends.begin());
  }
  int Begin(int s) const { return s == 0 ? 0 : ends[s - 1] + 1; }
};

// The index of the last forward op writing `var`, or -1.
int LastForwardWriter(const proto::BlockDesc& block, int forward_end,
                      const std::string& var) {
  int last = -1;
  for (int i = 0; i < forward_end; ++i)
    if (WritesVar(block.ops(i), var)) last = i;
  return last;
}

// Which segment writes and which segments read each var, over the forward
// ops; -2 stands for "more than one".
struct VarUse {
  int writer_segment = -3;  // -3: none yet
  bool read_elsewhere = false;
  bool kept = false;  // written by an op that is not replayed
};

Segments Analyze(const proto::BlockDesc& block,
                 const std::vector<std::string>& checkpoints) {
  Segments seg;
  seg.forward_end = ForwardEnd(block);
  seg.checkpoints = checkpoints;
  for (const std::string& c : checkpoints)
    seg.ends.push_back(LastForwardWriter(block, seg.forward_end, c));
  std::sort(seg.ends.begin(), seg.ends.end());
  seg.ends.erase(std::unique(seg.ends.begin(), seg.ends.end()), seg.ends.end());
  std::map<std::string, VarUse> use;
  for (int i = 0; i < seg.forward_end; ++i) {
    const proto::OpDesc& op = block.ops(i);
    const int s = seg.SegmentOf(i);
    const bool replayable = Replayable(block, op);
    for (const std::string& n : OpOutputNames(op)) {
      VarUse& u = use[n];
      u.writer_segment =
          u.writer_segment == -3 || u.writer_segment == s ? s : -2;
      u.kept = u.kept || !replayable;
    }
  }
  for (int i = 0; i < seg.forward_end; ++i) {
    const int s = seg.SegmentOf(i);
    for (const std::string& n : OpInputNames(block.ops(i))) {
      auto it = use.find(n);
      if (it != use.end() && it->second.writer_segment != s)
        it->second.read_elsewhere = true;
    }
  }
  const std::set<std::string> cps(checkpoints.begin(), checkpoints.end());
  for (const auto& [name, u] : use) {
    if (u.writer_segment < 0 || u.read_elsewhere || u.kept) continue;
    if (cps.count(name) || name == kEmptyVarName) continue;
    const proto::VarDesc* v = FindVarDesc(block, name);
    if (v == nullptr || v->persistable()) continue;
    seg.intermediates.emplace(name, u.writer_segment);
  }
  return seg;
}

// The backward ops renamed to read the copies: for each segment, the
// intermediates they read and the first op reading one. A slot read for
// its shape only (REGISTER_SHAPE_ONLY_INPUTS: elementwise_add_grad's X, a
// product before its bias) keeps the forward variable, whose shape the
// executor keeps after freeing its memory: nothing is replayed for it.
struct BackwardReads {
  std::map<int, std::set<std::string>> needed;
  std::map<int, int> first_reader;
};

BackwardReads RenameBackwardReads(proto::BlockDesc* block,
                                  const Segments& seg) {
  BackwardReads reads;
  for (int j = seg.forward_end; j < block->ops_size(); ++j) {
    proto::OpDesc* op = block->mutable_ops(j);
    if (!HasRole(*op, OpRole::kBackward)) continue;
    for (const std::string& n : OpOutputNames(*op))
      FLUID_ENFORCE(!seg.intermediates.count(n), "recompute: backward op ", j,
                    " '", op->type(), "' writes the forward variable ",
                    Quote(n));
    for (auto& slot : *op->mutable_inputs()) {
      if (ReadsShapeOnly(*op, slot.parameter())) continue;
      for (auto& n : *slot.mutable_arguments()) {
        auto it = seg.intermediates.find(n);
        if (it == seg.intermediates.end()) continue;
        reads.needed[it->second].insert(n);
        if (!reads.first_reader.count(it->second))
          reads.first_reader[it->second] = j;
        n = CopyOf(n);
      }
    }
  }
  return reads;
}

// Declares `copy` as a non-persistable copy of `var`'s desc.
void DeclareCopy(proto::BlockDesc* block, const std::string& var,
                 const std::string& copy) {
  if (FindVarDesc(*block, copy) != nullptr) return;
  const proto::VarDesc* v = FindVarDesc(*block, var);
  if (v == nullptr) return;
  proto::VarDesc c = *v;
  c.set_name(copy);
  c.set_persistable(false);
  *block->add_vars() = std::move(c);
}

// The replay of forward op `op` of segment `s`: the segment's
// intermediates read as copies, every output written as a copy; dropout
// draws the replayed op's mask without advancing its counter.
// A dropout whose mask alone is needed (its gradient reads Mask, nothing
// reads its Out's copy) is replayed without Out: it reads X's shape alone,
// from the forward variable, so nothing before it is replayed for it.
proto::OpDesc MakeReplay(proto::BlockDesc* block, proto::OpDesc op, int s,
                         const Segments& seg, bool mask_only) {
  for (auto& slot : *op.mutable_inputs()) {
    if (mask_only && slot.parameter() == "X") continue;
    for (auto& n : *slot.mutable_arguments()) {
      auto it = seg.intermediates.find(n);
      if (it != seg.intermediates.end() && it->second == s) n = CopyOf(n);
    }
  }
  if (op.type() == "dropout") {
    SetOpAttr(&op, "replay_of", OpOutput(op, "Out").at(0));
    auto* outs = op.mutable_outputs();
    for (int k = outs->size() - 1; k >= 0; --k)
      if (outs->Get(k).parameter() == "StepOut" ||
          (mask_only && outs->Get(k).parameter() == "Out"))
        outs->DeleteSubrange(k, 1);
  }
  for (auto& slot : *op.mutable_outputs())
    for (auto& n : *slot.mutable_arguments()) {
      if (n == kEmptyVarName) continue;
      DeclareCopy(block, n, CopyOf(n));
      n = CopyOf(n);
    }
  SetOpAttr(&op, kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward));
  SetOpAttr(&op, kRecomputeSegmentAttr, static_cast<int32_t>(s));
  return op;
}

// The replay ops of segment `s` that write the copies of `needed`, in
// forward order.
std::vector<proto::OpDesc> ReplayOps(proto::BlockDesc* block,
                                     const Segments& seg, int s,
                                     std::set<std::string> needed) {
  std::vector<std::pair<int, bool>> picked;  // op, mask only
  for (int i = seg.ends[s]; i >= seg.Begin(s); --i) {
    const proto::OpDesc& op = block->ops(i);
    bool writes = false;
    for (const std::string& n : OpOutputNames(op))
      writes = writes || needed.count(n);
    if (!writes) continue;
    const bool mask_only = op.type() == "dropout" &&
                           !needed.count(OpOutput(op, "Out").at(0)) &&
                           ShapeOnlyInputWithout("dropout", "X") != nullptr;
    picked.emplace_back(i, mask_only);
    for (const auto& slot : op.inputs()) {
      if (mask_only && slot.parameter() == "X") continue;  // its shape
      for (const std::string& n : slot.arguments()) {
        auto it = seg.intermediates.find(n);
        if (it != seg.intermediates.end() && it->second == s) needed.insert(n);
      }
    }
  }
  std::reverse(picked.begin(), picked.end());
  std::vector<proto::OpDesc> ops;
  for (const auto& [i, mask_only] : picked)
    ops.push_back(MakeReplay(block, block->ops(i), s, seg, mask_only));
  return ops;
}

// dropout_grad reading a replay's Mask differentiates the replay: it
// carries the replay's replay_of (CheckGradOpAttrs compares them).
void MarkDropoutGrads(proto::BlockDesc* block) {
  std::map<std::string, std::string> replay_of;  // Mask copy -> Out
  for (const auto& op : block->ops())
    if (op.type() == "dropout" && IsReplay(op))
      replay_of[OpOutput(op, "Mask").at(0)] =
          GetOpAttrAs<std::string>(op, "replay_of");
  for (auto& op : *block->mutable_ops()) {
    if (op.type() != "dropout_grad") continue;
    const std::vector<std::string> mask = OpInput(op, "Mask");
    if (mask.empty() || !replay_of.count(mask[0])) continue;
    SetOpAttr(&op, "replay_of", replay_of[mask[0]]);
  }
}

// Rewrites block 0 of `main` with the segments `seg`.
void Rewrite(proto::ProgramDesc* main, const Segments& seg) {
  proto::BlockDesc* block = main->mutable_blocks(0);
  const BackwardReads reads = RenameBackwardReads(block, seg);
  std::map<int, std::vector<proto::OpDesc>> before;  // op index -> replays
  for (const auto& [s, needed] : reads.needed) {
    std::vector<proto::OpDesc> ops = ReplayOps(block, seg, s, needed);
    auto& at = before[reads.first_reader.at(s)];
    at.insert(at.end(), ops.begin(), ops.end());
  }
  std::vector<proto::OpDesc> all(block->ops().begin(), block->ops().end());
  block->clear_ops();
  for (int j = 0; j < static_cast<int>(all.size()); ++j) {
    auto it = before.find(j);
    if (it != before.end())
      for (proto::OpDesc& r : it->second) {
        *block->add_ops() = std::move(r);
        InferShapeAtCompileTime(block->ops(block->ops_size() - 1), block);
      }
    *block->add_ops() = std::move(all[j]);
  }
  MarkDropoutGrads(block);
}

// Whether forward var `name` carries a gradient: the backward pass writes
// name@GRAD.
std::set<std::string> GradientCarriers(const proto::BlockDesc& block,
                                       int forward_end) {
  std::set<std::string> carriers;
  const std::string suffix = kGradSuffix;
  for (int j = forward_end; j < block.ops_size(); ++j)
    for (const std::string& n : OpOutputNames(block.ops(j))) {
      const size_t at = n.find(suffix);
      if (at != std::string::npos && at > 0) carriers.insert(n.substr(0, at));
    }
  return carriers;
}

// Candidates for `auto`: residual adds' and recurrent layers' outputs.
std::vector<std::pair<int, std::string>> AutoCandidates(
    const proto::BlockDesc& block, int forward_end,
    const std::set<std::string>& carriers) {
  auto activation = [&](const std::vector<std::string>& names) {
    return names.size() == 1 && carriers.count(names[0]) &&
           !IsPersistable(block, names[0]);
  };
  std::vector<std::pair<int, std::string>> out;
  for (int i = 0; i < forward_end; ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (op.type() == "elementwise_add") {
      const auto x = OpInput(op, "X"), y = OpInput(op, "Y");
      if (!activation(x) || !activation(y)) continue;
      if (!(VarShape(GetVarDesc(block, x[0])) ==
            VarShape(GetVarDesc(block, y[0]))))
        continue;
      out.emplace_back(i, OpOutput(op, "Out").at(0));
    } else if (op.type() == "lstm" || op.type() == "gru") {
      const auto h = OpOutput(op, "Hidden");
      if (activation(h)) out.emplace_back(i, h[0]);
    }
  }
  return out;
}

// Whether `var`, written by forward op `p`, cuts the forward pass: no
// forward op after `p` reads another gradient-carrying variable written
// at or before `p`.
bool IsCut(const proto::BlockDesc& block, int forward_end, int p,
           const std::string& var, const std::set<std::string>& carriers) {
  std::set<std::string> before;
  for (int i = 0; i <= p; ++i)
    for (const std::string& n : OpOutputNames(block.ops(i)))
      if (n != var && carriers.count(n) && !IsPersistable(block, n))
        before.insert(n);
  for (int i = p + 1; i < forward_end; ++i)
    for (const std::string& n : OpInputNames(block.ops(i)))
      if (before.count(n)) return false;
  return true;
}

std::string QuotedList(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : ", ") + Quote(names[i]);
  return out;
}

}  // namespace

std::vector<std::string> AutoCheckpoints(const proto::ProgramDesc& main) {
  CheckOneBlock(main);
  const proto::BlockDesc& block = main.blocks(0);
  const int b = ForwardEnd(block);
  const std::set<std::string> carriers = GradientCarriers(block, b);
  std::vector<std::string> out;
  for (const auto& [p, var] : AutoCandidates(block, b, carriers))
    if (IsCut(block, b, p, var, carriers)) out.push_back(var);
  return out;
}

std::vector<std::string> ResolveCheckpoints(
    const proto::ProgramDesc& main, const proto::RecomputeConfig& config) {
  CheckOneBlock(main);
  const proto::BlockDesc& block = main.blocks(0);
  std::vector<std::string> names(config.checkpoints().begin(),
                                 config.checkpoints().end());
  const bool automatic = names.empty() || std::find(names.begin(), names.end(),
                                                    "auto") != names.end();
  if (automatic) {
    FLUID_ENFORCE(names.size() <= 1, "recompute: checkpoints lists \"auto\" ",
                  "with other names; give \"auto\" alone or only names");
    names = AutoCheckpoints(main);
    FLUID_ENFORCE(!names.empty(), "recompute: \"auto\" found no checkpoints ",
                  "(it takes the outputs of residual adds and lstm/gru ",
                  "layers that cut the forward pass); name them in ",
                  "recompute_configs.checkpoints");
  }
  std::vector<std::string> unknown, not_computed;
  const int b = ForwardEnd(block);
  std::vector<std::pair<int, std::string>> found;
  for (const std::string& n : names) {
    if (FindVarDesc(block, n) == nullptr) {
      unknown.push_back(n);
      continue;
    }
    const int w = LastForwardWriter(block, b, n);
    if (w < 0 || IsPersistable(block, n)) {
      not_computed.push_back(n);
      continue;
    }
    found.emplace_back(w, n);
  }
  FLUID_ENFORCE_CODE(unknown.empty(), ErrorCode::kNotFound,
                     "recompute: checkpoints ", QuotedList(unknown),
                     " are not variables of the program");
  FLUID_ENFORCE(not_computed.empty(), "recompute: checkpoints ",
                QuotedList(not_computed),
                " are not computed by the forward pass (a feed, a ",
                "parameter or other persistable variable); checkpoints are ",
                "activations");
  std::stable_sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (const auto& [w, n] : found)
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  return out;
}

proto::TrainingJob RecomputeRewrite(const proto::TrainingJob& job,
                                    const proto::RecomputeConfig& config) {
  CheckJob(job, "job");
  CheckOneBlock(job.main());
  for (const auto& op : job.main().blocks(0).ops())
    if (IsReplay(op)) return job;
  const std::vector<std::string> checkpoints =
      ResolveCheckpoints(job.main(), config);
  proto::TrainingJob out = job;
  const Segments seg = Analyze(out.main().blocks(0), checkpoints);
  Rewrite(out.mutable_main(), seg);
  LintRecompute(out.main(), checkpoints);
  return out;
}

void LintRecompute(const proto::ProgramDesc& main,
                   const std::vector<std::string>& checkpoints) {
  CheckOneBlock(main);
  const proto::BlockDesc& block = main.blocks(0);
  const Segments seg = Analyze(block, checkpoints);
  std::set<std::string> written;  // copies written so far
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    const bool replay = IsReplay(op);
    for (const auto& slot : op.inputs()) {
      // A shape-only slot may read the forward variable (its shape stays).
      const bool values = !ReadsShapeOnly(op, slot.parameter());
      for (const std::string& n : slot.arguments()) {
        FLUID_ENFORCE(!IsCopy(n) || (i >= seg.forward_end && written.count(n)),
                      "recompute: op ", i, " '", op.type(), "' reads ",
                      Quote(n), " before a replay op writes it");
        auto it = seg.intermediates.find(n);
        FLUID_ENFORCE(i < seg.forward_end || it == seg.intermediates.end() ||
                          !values || !HasRole(op, OpRole::kBackward),
                      "recompute: backward op ", i, " '", op.type(), "' reads ",
                      Quote(n), ", an intermediate of segment ",
                      it == seg.intermediates.end() ? -1 : it->second,
                      ", instead of its copy ", Quote(CopyOf(n)));
      }
    }
    for (const std::string& n : OpOutputNames(op)) {
      if (n == kEmptyVarName) continue;
      FLUID_ENFORCE(!replay || (IsCopy(n) && !IsPersistable(block, n)),
                    "recompute: replay op ", i, " '", op.type(), "' writes ",
                    Quote(n), "; a replay writes only non-persistable ",
                    kRecomputeSuffix, " copies");
      FLUID_ENFORCE(replay || !IsCopy(n), "recompute: op ", i, " '", op.type(),
                    "' writes the copy ", Quote(n), " but is no replay op");
      if (IsCopy(n)) written.insert(n);
    }
    FLUID_ENFORCE(!replay || HasRole(op, OpRole::kBackward),
                  "recompute: replay op ", i, " '", op.type(),
                  "' lies in the forward pass");
  }
}

int64_t LiveBytesAfterForward(const proto::ProgramDesc& main, int64_t batch) {
  const proto::BlockDesc& block = main.blocks(0);
  const int b = ForwardEnd(block);
  std::set<std::string> before, after;
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    std::set<std::string>& into = i < b ? before : after;
    for (const auto& slot : op.inputs())  // a shape read keeps no values
      if (i < b || !ReadsShapeOnly(op, slot.parameter()))
        into.insert(slot.arguments().begin(), slot.arguments().end());
    for (const std::string& n : OpOutputNames(op)) into.insert(n);
  }
  int64_t bytes = 0;
  for (const std::string& n : before) {
    if (!after.count(n)) continue;
    const proto::VarDesc* v = FindVarDesc(block, n);
    if (v == nullptr || v->persistable()) continue;
    int64_t numel = 1;
    for (int64_t d : VarShape(*v).ToVector()) numel *= d < 0 ? batch : d;
    bytes += numel * static_cast<int64_t>(SizeOf(VarDtype(*v)));
  }
  return bytes;
}

}  // namespace fluid
