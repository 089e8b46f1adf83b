// Which stage each op of a program runs on (transpiler/pipeline.h): the
// cuts, by attr or balanced, and the stages of backward and optimizer ops.
#include "transpiler/pipeline_plan.h"

#include <algorithm>
#include <limits>

#include "src/framework/enforce.h"
#include "src/framework/program_desc.h"
#include "transpiler/program_query.h"
#include "transpiler/recompute.h"
#include "transpiler/tensor_parallel.h"

namespace fluid {

namespace {

constexpr const char* kPrefix = "pipeline: ";

bool IsForwardOp(const proto::OpDesc& op) {
  return !HasRole(op, OpRole::kBackward) && !HasRole(op, OpRole::kOptimize) &&
         !HasRole(op, OpRole::kCollective);
}

std::string OpName(const proto::BlockDesc& block, int i) {
  return "op #" + std::to_string(i) + " (" + block.ops(i).type() + ")";
}

// The forward var `name` of a gradient name ("x@GRAD@RENAME@0" -> "x"),
// "" for a name that is no gradient.
std::string GradBase(const std::string& name) {
  const size_t at = name.find(kGradSuffix);
  return at == std::string::npos ? std::string() : name.substr(0, at);
}

int64_t Numel(const proto::VarDesc& v) {
  int64_t n = 1;
  for (int64_t d : VarShape(v)) n *= d > 0 ? d : 1;
  return n;
}

// Forward ops off the data's path: reading nothing computed from a feed,
// read by no op that is on it.
void FindStepOps(const proto::BlockDesc& block, PipelinePlan* plan) {
  std::set<std::string> written, from_data;
  std::vector<bool> reads_data(block.ops_size(), false);
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (!IsForwardOp(op)) continue;
    for (const std::string& n : OpInputNames(op)) {
      const proto::VarDesc* v = FindVarDesc(block, n);
      const bool feed =
          !written.count(n) && (v == nullptr || !v->persistable());
      reads_data[i] = reads_data[i] || feed || from_data.count(n) > 0;
    }
    for (const std::string& n : OpOutputNames(op)) {
      written.insert(n);
      if (reads_data[i]) from_data.insert(n);
    }
  }
  // Backwards: an op whose result an op on the data's path reads is on it.
  std::set<std::string> needed;
  for (int i = block.ops_size() - 1; i >= 0; --i) {
    const proto::OpDesc& op = block.ops(i);
    if (!IsForwardOp(op)) continue;
    bool on_path = reads_data[i] || HasRole(op, OpRole::kLoss);
    for (const std::string& n : OpOutputNames(op))
      on_path = on_path || needed.count(n) > 0;
    if (!on_path) {
      plan->step_ops.insert(i);
      continue;
    }
    if (!reads_data[i] && !HasOpAttr(op, kPipelineStageAttr))
      plan->weight_ops.insert(i);  // data-only ones are taken out later
    for (const std::string& n : OpInputNames(op)) needed.insert(n);
  }
  // A step op runs once per step on the plain names, and a value an op on
  // the path writes is renamed per micro-batch: an op reading one (a
  // DynamicRNN's unused arrays, filled at its start index) joins the path,
  // and is dropped if no stage reads what it writes.
  for (bool changed = true; changed;) {
    changed = false;
    std::set<std::string> on_path;
    for (int i = 0; i < block.ops_size(); ++i)
      if (IsForwardOp(block.ops(i)) && !plan->step_ops.count(i))
        for (const std::string& n : OpOutputNames(block.ops(i)))
          on_path.insert(n);
    for (auto it = plan->step_ops.begin(); it != plan->step_ops.end();) {
      const proto::OpDesc& op = block.ops(*it);
      bool reads = false;
      for (const std::string& n : OpInputNames(op))
        reads = reads || on_path.count(n) > 0;
      if (!reads) {
        ++it;
        continue;
      }
      if (!HasOpAttr(op, kPipelineStageAttr)) plan->weight_ops.insert(*it);
      it = plan->step_ops.erase(it);
      changed = true;
    }
  }
}

// Forward ops that read no parameter and nothing computed from one.
void FindDataOnly(const proto::BlockDesc& block, PipelinePlan* plan) {
  std::set<std::string> derived;  // values computed from parameters
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (!IsForwardOp(op) || plan->step_ops.count(i)) continue;
    bool data = !HasRole(op, OpRole::kLoss);
    for (const std::string& n : OpInputNames(op)) {
      const proto::VarDesc* v = FindVarDesc(block, n);
      if (derived.count(n) || (v != nullptr && v->persistable())) data = false;
    }
    for (const std::string& n : OpOutputNames(op)) {
      const proto::VarDesc* v = FindVarDesc(block, n);
      if (v != nullptr && v->persistable()) data = false;
    }
    if (data) {
      plan->data_only.insert(i);
      plan->weight_ops.erase(i);
    } else {
      for (const std::string& n : OpOutputNames(op)) derived.insert(n);
    }
  }
}

// The values tensor parallelism split (transpiler/tensor_parallel.h): from
// a column-parallel mul's output to the row-parallel mul (or the loss)
// reading them. A
// cut there would send each rank's slice to the next stage, where the
// split's lint no longer sees it: cuts go between the pairs.
std::set<std::string> SplitValues(const proto::BlockDesc& block) {
  std::set<std::string> split;
  for (const auto& op : block.ops()) {
    if (HasRole(op, OpRole::kBackward) || HasRole(op, OpRole::kOptimize))
      continue;
    const std::string role = HasOpAttr(op, kTpRoleAttr)
                                 ? GetOpAttrAs<std::string>(op, kTpRoleAttr)
                                 : std::string();
    // (A vocabulary-parallel loss gives each rank the whole loss.)
    if (role == "row" || role == "reduce" || role == "loss") continue;
    bool reads = role == "column";
    for (const std::string& n : OpInputNames(op))
      reads = reads || split.count(n);
    if (reads)
      for (const std::string& n : OpOutputNames(op)) split.insert(n);
  }
  return split;
}

// The values computed left of forward op `cut` (among `ops`) and read at
// or right of it; -1 when one of them is in `split`.
int Crossing(const proto::BlockDesc& block, const std::vector<int>& ops,
             size_t cut, const std::set<std::string>& split) {
  std::set<std::string> made, crossing;
  for (size_t k = 0; k < ops.size(); ++k) {
    const proto::OpDesc& op = block.ops(ops[k]);
    if (k < cut) {
      for (const std::string& n : OpOutputNames(op)) made.insert(n);
    } else {
      for (const std::string& n : OpInputNames(op))
        if (made.count(n)) crossing.insert(n);
    }
  }
  for (const std::string& n : crossing)
    if (split.count(n)) return -1;
  // Nor between a row-parallel mul and the group sum of its partial
  // product.
  const proto::OpDesc& next = block.ops(ops[cut]);
  if (HasOpAttr(next, kTpRoleAttr) &&
      GetOpAttrAs<std::string>(next, kTpRoleAttr) == "reduce")
    return -1;
  return static_cast<int>(crossing.size());
}

// Cuts `ops` (forward, not data-only) into `stages` runs of about equal
// cost (parameter elements read, plus one per op), each cut moved within a
// tenth of a stage's cost to where the fewest values cross it.
std::vector<int> BalancedStages(const proto::BlockDesc& block,
                                const std::vector<int>& ops, int stages) {
  std::vector<double> cum(ops.size() + 1, 0.0);
  for (size_t k = 0; k < ops.size(); ++k) {
    double cost = 1;
    for (const std::string& n : OpInputNames(block.ops(ops[k]))) {
      const proto::VarDesc* v = FindVarDesc(block, n);
      if (v != nullptr && v->persistable()) cost += Numel(*v);
    }
    cum[k + 1] = cum[k] + cost;
  }
  const double per = cum.back() / stages;
  const std::set<std::string> split = SplitValues(block);
  std::vector<size_t> cuts;
  size_t prev = 0;
  for (int b = 1; b < stages; ++b) {
    const double target = per * b;
    size_t best = 0;
    int best_cross = std::numeric_limits<int>::max();
    double best_dist = 0;
    for (size_t c = prev + 1; c + (stages - b) <= ops.size(); ++c) {
      const double dist = std::abs(cum[c] - target);
      if (dist > per * 0.1) continue;
      const int cross = Crossing(block, ops, c, split);
      if (cross < 0) continue;
      if (best == 0 || cross < best_cross ||
          (cross == best_cross && dist < best_dist)) {
        best = c, best_cross = cross, best_dist = dist;
      }
    }
    if (best == 0) {  // no cut within the window: the nearest
      for (size_t c = prev + 1; c + (stages - b) <= ops.size(); ++c)
        if (Crossing(block, ops, c, split) >= 0 &&
            (best == 0 ||
             std::abs(cum[c] - target) < std::abs(cum[best] - target)))
          best = c;
      FLUID_ENFORCE(best != 0, kPrefix, "no place for cut ", b, " of ",
                    stages - 1, " outside the tensor-parallel pairs");
    }
    cuts.push_back(best);
    prev = best;
  }
  std::vector<int> stage(ops.size(), 0);
  for (size_t k = 0; k < ops.size(); ++k)
    for (size_t c : cuts)
      if (k >= c) ++stage[k];
  return stage;
}

// Each weight op on the stage of its first reader (last ones first, so
// that a chain of them follows its end); stage 0 when nothing reads it.
void PlaceWeightOps(const proto::BlockDesc& block, PipelinePlan* plan) {
  for (auto it = plan->weight_ops.rbegin(); it != plan->weight_ops.rend();
       ++it) {
    const std::set<std::string> made = [&] {
      const auto outs = OpOutputNames(block.ops(*it));
      return std::set<std::string>(outs.begin(), outs.end());
    }();
    int stage = -1;
    for (int j = *it + 1; j < block.ops_size() && stage < 0; ++j) {
      if (!plan->stage.count(j) || plan->stage.at(j) < 0) continue;
      for (const std::string& n : OpInputNames(block.ops(j)))
        if (made.count(n)) stage = plan->stage.at(j);
    }
    plan->stage[*it] = stage < 0 ? 0 : stage;
  }
}

void PlaceForward(const proto::BlockDesc& block, int stages,
                  PipelinePlan* plan) {
  std::vector<int> ops;
  bool marked = false;
  for (int i = 0; i < block.ops_size(); ++i) {
    if (!IsForwardOp(block.ops(i)) || plan->data_only.count(i) ||
        plan->step_ops.count(i) || plan->weight_ops.count(i))
      continue;
    ops.push_back(i);
    marked = marked || HasOpAttr(block.ops(i), kPipelineStageAttr);
  }
  FLUID_ENFORCE(static_cast<int>(ops.size()) >= stages, kPrefix,
                "the program "
                "has ",
                ops.size(), " forward ops to cut into ", stages, " stages");
  if (!marked) {
    const std::vector<int> s = BalancedStages(block, ops, stages);
    for (size_t k = 0; k < ops.size(); ++k) plan->stage[ops[k]] = s[k];
    PlaceWeightOps(block, plan);
    return;
  }
  int current = 0;
  for (int i : ops) {
    if (HasOpAttr(block.ops(i), kPipelineStageAttr))
      current = GetOpAttrAs<int32_t>(block.ops(i), kPipelineStageAttr);
    FLUID_ENFORCE(current >= 0 && current < stages, kPrefix, OpName(block, i),
                  " is placed on stage ", current, " of a pipeline of ", stages,
                  " stages (fluid.pipeline_stage takes 0 to ", stages - 1, ")");
    plan->stage[i] = current;
  }
  PlaceWeightOps(block, plan);
}

// Each value's stage: its forward writer's (-1: every stage's, for
// data-only values and feeds); a parameter's: its forward readers', which
// must agree.
void PlaceValues(const proto::BlockDesc& block, PipelinePlan* plan) {
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (!IsForwardOp(op)) continue;
    if (plan->step_ops.count(i)) {
      plan->stage[i] = -1;
      for (const std::string& n : OpOutputNames(op)) plan->value_stage[n] = -1;
      continue;
    }
    const int s = plan->data_only.count(i) ? -1 : plan->stage.at(i);
    for (const std::string& n : OpOutputNames(op)) plan->value_stage[n] = s;
    if (s < 0) continue;
    for (const std::string& n : OpInputNames(op)) {
      const proto::VarDesc* v = FindVarDesc(block, n);
      if (v == nullptr || !v->persistable()) continue;
      auto [it, fresh] = plan->value_stage.emplace(n, s);
      FLUID_ENFORCE(fresh || it->second == s, kPrefix, "the parameter ",
                    Quote(n), " is read on stages ", it->second, " and ", s,
                    " (", OpName(block, i),
                    "); a parameter lives on one stage: move the ops that "
                    "share it onto one stage with fluid.pipeline_stage");
    }
  }
}

int ValueStage(const PipelinePlan& plan, const std::string& name) {
  auto it = plan.value_stage.find(name);
  return it == plan.value_stage.end() ? -1 : it->second;
}

// A backward op runs where the values whose gradients it reads (else
// writes) were made.
int BackwardStage(const proto::BlockDesc& block, const PipelinePlan& plan,
                  int i) {
  const proto::OpDesc& op = block.ops(i);
  // A recompute replay runs where the ops it replays ran: where the values
  // it writes copies of were made.
  if (HasOpAttr(op, kRecomputeSegmentAttr)) {
    for (const std::string& n : OpOutputNames(op)) {
      const size_t at = n.rfind(kRecomputeSuffix);
      const int s =
          at == std::string::npos ? -1 : ValueStage(plan, n.substr(0, at));
      if (s >= 0) return s;
    }
  }
  for (const auto& names : {OpInputNames(op), OpOutputNames(op)}) {
    for (const std::string& n : names) {
      const std::string base = GradBase(n);
      if (base.empty()) continue;
      const int s = ValueStage(plan, base);
      if (s >= 0) return s;
    }
  }
  FLUID_THROW(ErrorCode::kInvalidArgument, kPrefix, "cannot place backward ",
              OpName(block, i),
              ": it reads and writes no gradient of a value made on a stage");
}

// An optimizer op runs on its parameter's stage; one that touches no
// stage's parameter or gradient (a learning-rate schedule) on every stage.
int OptimizeStage(const proto::BlockDesc& block, const PipelinePlan& plan,
                  int i) {
  const proto::OpDesc& op = block.ops(i);
  // On every stage, whichever stages' gradients it reads: the loss scale
  // it keeps is read by the last stage's forward pass.
  if (op.type() == "check_finite_and_unscale" ||
      op.type() == "update_loss_scaling")
    return kSplitStages;
  std::set<int> stages;
  for (const auto& names : {OpInputNames(op), OpOutputNames(op)}) {
    for (const std::string& n : names) {
      const std::string base = GradBase(n);
      const int s = ValueStage(plan, base.empty() ? n : base);
      const proto::VarDesc* v = FindVarDesc(block, base.empty() ? n : base);
      if (s >= 0 && (!base.empty() || (v != nullptr && v->persistable())))
        stages.insert(s);
    }
  }
  for (const std::string& n : OpInputNames(op)) {
    auto it = plan.optimize_value_stage.find(n);
    if (it != plan.optimize_value_stage.end()) stages.insert(it->second);
  }
  if (stages.empty()) return -1;
  if (stages.size() > 1 && op.type() == "sum") return kSplitSum;
  FLUID_ENFORCE_CODE(
      stages.size() == 1, ErrorCode::kUnimplemented, kPrefix, OpName(block, i),
      " reads the parameters or gradients of stages ", *stages.begin(), " and ",
      *stages.rbegin(),
      ", which pipelines do not compose with yet: turn one of them off");
  return *stages.begin();
}

}  // namespace

PipelinePlan PlanPipeline(const proto::BlockDesc& block, int stages) {
  PipelinePlan plan;
  FindStepOps(block, &plan);
  FindDataOnly(block, &plan);
  PlaceForward(block, stages, &plan);
  PlaceValues(block, &plan);
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (HasRole(op, OpRole::kBackward)) {
      plan.stage[i] = BackwardStage(block, plan, i);
    } else if (HasRole(op, OpRole::kOptimize)) {
      const int s = plan.stage[i] = OptimizeStage(block, plan, i);
      if (s >= 0)
        for (const std::string& n : OpOutputNames(op))
          if (!FindVarDesc(block, n) || !FindVarDesc(block, n)->persistable())
            plan.optimize_value_stage[n] = s;
    } else if (HasRole(op, OpRole::kCollective)) {
      FLUID_THROW(ErrorCode::kInvalidArgument, kPrefix, OpName(block, i),
                  " is a collective: cut the plain program into stages");
    }
  }
  // A forward op reads its own stage's values, or the stage's just before.
  for (const auto& [i, s] : plan.stage) {
    const proto::OpDesc& op = block.ops(i);
    if (!IsForwardOp(op)) continue;
    for (const std::string& n : OpInputNames(op)) {
      const int from = ValueStage(plan, n);
      const proto::VarDesc* v = FindVarDesc(block, n);
      if (from < 0 || from == s || (v != nullptr && v->persistable())) continue;
      FLUID_ENFORCE(from < s, kPrefix, OpName(block, i), " on stage ", s,
                    " reads ", Quote(n), ", made later on stage ", from,
                    ": stages must follow the forward pass");
      FLUID_ENFORCE(from == s - 1, kPrefix, OpName(block, i), " on stage ", s,
                    " reads ", Quote(n), " made on stage ", from,
                    ": a value crosses one cut at a time; move the cut "
                    "(fluid.pipeline_stage) so that it does not skip stage ",
                    from + 1);
    }
  }
  return plan;
}

}  // namespace fluid
