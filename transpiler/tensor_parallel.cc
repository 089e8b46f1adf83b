// The tensor-parallel rewrite of a planned job (tensor_parallel.h), and
// its lint.
#include "transpiler/tensor_parallel.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "src/framework/enforce.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/collective_transpiler.h"
#include "transpiler/control_flow_lint.h"
#include "transpiler/pipeline.h"
#include "transpiler/program_query.h"
#include "transpiler/strategy.h"

namespace fluid {

namespace {

// The group sum (or max) of `var`, written by `after`: a collective, and
// an optimize op too after one (a clip's squared norm, fp16's overflow
// flag), so that it runs when the optimizer runs (gradient merge skips
// both on its micro-steps).
proto::OpDesc GroupSum(const std::string& var, const proto::OpDesc& after,
                       const std::string& reduce = "sum") {
  const int role =
      static_cast<int>(OpRole::kCollective) |
      (HasRole(after, OpRole::kOptimize) ? static_cast<int>(OpRole::kOptimize)
                                         : 0);
  proto::OpDesc op = WithRole(
      MakeOp("c_allreduce", {{"X", {var}}}, {{"Out", {var}}},
             {{"reduce_type", reduce}, {"ring_id", kTensorParallelRing}}),
      static_cast<OpRole>(role));
  SetOpAttr(&op, kTpRoleAttr, std::string("reduce"));
  return op;
}

// `var`'s declared shape with dim `axis` divided by tp (unknown dims stay).
void SplitShape(proto::VarDesc* var, int axis, int tp) {
  Shape s = VarShape(*var);
  FLUID_ENFORCE(axis < s.rank(), "'", var->name(), "' has no axis ", axis);
  if (s[axis] > 0) s[axis] /= tp;
  SetVarShape(var, s);
}

// Every split value, its gradients (v@GRAD and their renamed parts) and
// each split parameter's optimizer state, with the axis they split along.
std::map<std::string, int> SplitVars(const proto::BlockDesc& block,
                                     const TensorParallelPlan& plan) {
  std::map<std::string, int> all = plan.split;
  for (const auto& v : block.vars()) {
    // v@GRAD and the parts summed into it (v@GRAD@RENAME@...): shaped like
    // v, unlike what else is named after it (a clip's v@GRAD@SQUARED_NORM).
    const std::string& n = v.name();
    const size_t at = n.find("@GRAD");
    if (at == std::string::npos) continue;
    auto it = plan.split.find(n.substr(0, at));
    if (it != plan.split.end() &&
        VarShape(v) == VarShape(GetVarDesc(block, it->first)))
      all[n] = it->second;
  }
  for (const auto& op : block.ops()) {
    if (!IsUpdateOp(op)) continue;
    auto it = plan.split.find(OpInput(op, "Param")[0]);
    if (it == plan.split.end()) continue;
    for (const auto& slot : op.inputs())
      if (KindOf(block, op, slot.parameter()) == SlotKind::kState)
        for (const auto& n : slot.arguments()) all[n] = it->second;
  }
  return all;
}

// The persistable vars among `split` (parameters, optimizer state).
std::map<std::string, int> SplitState(const proto::BlockDesc& block,
                                      const std::map<std::string, int>& split) {
  std::map<std::string, int> out;
  for (const auto& kv : split) {
    const proto::VarDesc* v = FindVarDesc(block, kv.first);
    if (v != nullptr && v->persistable()) out.insert(kv);
  }
  return out;
}

bool IsGradOf(const proto::OpDesc& grad, const proto::OpDesc& fwd) {
  return grad.type() == fwd.type() + "_grad" &&
         OpInput(grad, "X") == OpInput(fwd, "X") &&
         OpInput(grad, "Y") == OpInput(fwd, "Y");
}

// A global-norm clip's squared norm of a split gradient, summed over the
// group; clip_by_norm of one is refused (its norm is per parameter).
void CheckClip(const proto::OpDesc& op, const std::map<std::string, int>& split,
               bool* sum_after) {
  *sum_after = false;
  if (op.type() != "squared_l2_norm" && op.type() != "clip_by_norm") return;
  const std::string x = OpInput(op, "X")[0];
  if (!split.count(x)) return;
  FLUID_ENFORCE(op.type() == "squared_l2_norm", "gradient '", x,
                "' is split by tensor parallelism and clipped by clip_by_norm, "
                "whose norm would be this rank's slice's: clip by global norm "
                "(GradientClipByGlobalNorm) or by value instead");
  *sum_after = true;
}

// The table a lookup_table (or its gradient op) reads, or "".
std::string LookupTable(const proto::OpDesc& op) {
  if (op.type() != "lookup_table" && op.type() != "lookup_table_grad")
    return "";
  return OpInput(op, "W")[0];
}

// A lookup (or its gradient) of a table split by rows: c_embedding over
// the tensor-parallel ring.
void ToVocabularyParallel(int tp, proto::OpDesc* op) {
  op->set_type(op->type() == "lookup_table" ? "c_embedding"
                                            : "c_embedding_grad");
  SetOpAttr(op, "ring_id", int32_t{kTensorParallelRing});
  SetOpAttr(op, "nranks", int32_t{tp});
  SetOpAttr(op, "start_index", int64_t{-1});
  SetOpAttr(op, kTpRoleAttr, std::string("embedding"));
}

// A cross entropy over split logits (or its gradient op):
// c_softmax_with_cross_entropy over the tensor-parallel ring.
void ToVocabularyParallelLoss(int tp, proto::OpDesc* op) {
  op->set_type("c_" + op->type());
  auto* attrs = op->mutable_attrs();  // soft_label false: the plan's rule
  for (int k = attrs->size() - 1; k >= 0; --k)
    if (attrs->Get(k).name() == "soft_label") attrs->DeleteSubrange(k, 1);
  SetOpAttr(op, "ring_id", int32_t{kTensorParallelRing});
  SetOpAttr(op, "nranks", int32_t{tp});
  SetOpAttr(op, kTpRoleAttr, std::string("loss"));
}

// The input gradient of each column-parallel mul (partial on each rank),
// by the index of the mul_grad op writing it.
std::map<int, std::string> PartialGradients(const proto::BlockDesc& src,
                                            const TensorParallelPlan& plan) {
  std::map<int, std::string> out;
  for (int i = 0; i < src.ops_size(); ++i) {
    const proto::OpDesc& op = src.ops(i);
    if (!HasRole(op, OpRole::kBackward) || op.type() != "mul_grad") continue;
    for (int c : plan.column) {
      if (!IsGradOf(op, src.ops(c))) continue;
      const auto dx = OpOutput(op, "X@GRAD");
      if (!dx.empty() && !dx[0].empty() && dx[0] != kEmptyVarName)
        out[i] = dx[0];
    }
  }
  return out;
}

// Whether op `sum` adds partial gradients only (`partial`), each read by
// nothing else: then one group sum of its output replaces theirs (the
// attention's q, k and v input gradients: one allreduce, not three).
bool SumsPartialsOnly(const proto::BlockDesc& src, int sum,
                      const std::set<std::string>& partial) {
  const proto::OpDesc& op = src.ops(sum);
  if (op.type() != "sum" || !HasRole(op, OpRole::kBackward)) return false;
  for (const auto& x : OpInput(op, "X")) {
    if (!partial.count(x)) return false;
    for (int i = 0; i < src.ops_size(); ++i)
      if (i != sum && ReadsVar(src.ops(i), x)) return false;
  }
  return true;
}

// What is summed over the group after which op: each row mul's product,
// each squared norm of a split gradient (a global-norm clip), and each
// column mul's input gradient, or the sum that adds only such gradients.
std::map<int, std::string> GroupSums(const proto::BlockDesc& src,
                                     const TensorParallelPlan& plan,
                                     const std::map<std::string, int>& split) {
  std::map<int, std::string> after = PartialGradients(src, plan);
  std::set<std::string> partial;
  for (const auto& kv : after) partial.insert(kv.second);
  for (int i = 0; i < src.ops_size(); ++i) {
    const proto::OpDesc& op = src.ops(i);
    bool clip_sum = false;
    CheckClip(op, split, &clip_sum);
    if (plan.row.count(i) || plan.embeddings.count(i) || clip_sum)
      after[i] = OpOutput(op, "Out")[0];
    if (!SumsPartialsOnly(src, i, partial)) continue;
    const std::vector<std::string> xs = OpInput(op, "X");
    for (auto it = after.begin(); it != after.end();)
      it = std::count(xs.begin(), xs.end(), it->second) ? after.erase(it)
                                                        : std::next(it);
    after[i] = OpOutput(op, "Out")[0];
  }
  return after;
}

void RewriteMain(const TensorParallelPlan& plan,
                 const std::map<std::string, int>& split, int tp,
                 proto::BlockDesc* block) {
  const proto::BlockDesc src = *block;
  for (auto& v : *block->mutable_vars()) {
    auto it = split.find(v.name());
    if (it != split.end()) SplitShape(&v, it->second, tp);
  }
  // A reshape's new shape attr, on it and on its gradient op (which must
  // carry its forward op's attrs).
  std::map<std::string, std::pair<int, int64_t>> reshaped;  // by input
  for (const auto& [i, change] : plan.reshapes)
    reshaped[OpInput(src.ops(i), "X")[0]] = change;
  const std::map<int, std::string> sums = GroupSums(src, plan, split);
  std::set<std::string> split_tables;  // their gradient ops change too
  for (int e : plan.embeddings) split_tables.insert(LookupTable(src.ops(e)));
  std::set<std::string> split_softmax;  // a split loss's, read by its grad
  for (int l : plan.losses)
    split_softmax.insert(OpOutput(src.ops(l), "Softmax")[0]);
  block->clear_ops();
  for (int i = 0; i < src.ops_size(); ++i) {
    proto::OpDesc op = src.ops(i);
    auto rs =
        reshaped.find(op.type() == "reshape" || op.type() == "reshape_grad"
                          ? OpInput(op, "X")[0]
                          : std::string());
    if (rs != reshaped.end()) {
      auto spec = GetOpAttrAs<std::vector<int64_t>>(op, "shape");
      spec[rs->second.first] = rs->second.second;
      SetOpAttr(&op, "shape", spec);
    }
    if (plan.column.count(i))
      SetOpAttr(&op, kTpRoleAttr, std::string("column"));
    if (plan.row.count(i)) SetOpAttr(&op, kTpRoleAttr, std::string("row"));
    if (plan.embeddings.count(i) || split_tables.count(LookupTable(op)))
      ToVocabularyParallel(tp, &op);
    if (plan.losses.count(i) ||
        (op.type() == "softmax_with_cross_entropy_grad" &&
         split_softmax.count(OpInput(op, "Softmax")[0])))
      ToVocabularyParallelLoss(tp, &op);
    // Dropout sees whole values only: the ranks of a group draw one mask
    // (its gradient op carries the forward op's attrs).
    if (op.type() == "dropout" || op.type() == "dropout_grad")
      SetOpAttr(&op, "ring_id", int32_t{kDataParallelRing});
    *block->add_ops() = op;
    auto sum = sums.find(i);
    if (sum != sums.end()) *block->add_ops() = GroupSum(sum->second, op);
    // fp16's overflow check sees this rank's slices: every rank of the
    // group takes the group's verdict, so that all skip the same steps.
    if (op.type() == "check_finite_and_unscale")
      *block->add_ops() = GroupSum(OpOutput(op, "FoundInfinite")[0], op, "max");
  }
}

// Moves each state's broadcast and slicing right after the last op that
// writes it (its initialiser), so that the startup holds one state whole at
// a time: its peak is the slices and the largest whole state, not every
// state whole (a model too big for one rank must start on one). Every
// rank reorders the same program alike, so the collectives stay in step;
// a state no op writes (loaded elsewhere) keeps its ops where they were.
void InterleaveSlicing(proto::BlockDesc* block) {
  auto slices = [](const proto::OpDesc& op) {
    return (op.type() == "c_broadcast" || op.type() == "c_split") &&
           OpInput(op, "X") == OpOutput(op, "Out");
  };
  std::map<std::string, int> last_writer;
  for (int i = 0; i < block->ops_size(); ++i)
    if (!slices(block->ops(i)))
      for (const std::string& n : OpOutputNames(block->ops(i)))
        last_writer[n] = i;
  std::map<int, std::vector<proto::OpDesc>> after;  // writer -> its slicing
  std::vector<proto::OpDesc> rest;
  for (const auto& op : block->ops()) {
    if (!slices(op)) continue;
    auto w = last_writer.find(OpInput(op, "X").at(0));
    (w == last_writer.end() ? rest : after[w->second]).push_back(op);
  }
  std::vector<proto::OpDesc> ops;
  for (int i = 0; i < block->ops_size(); ++i) {
    if (slices(block->ops(i))) continue;
    ops.push_back(block->ops(i));
    auto a = after.find(i);
    if (a != after.end())
      ops.insert(ops.end(), a->second.begin(), a->second.end());
  }
  ops.insert(ops.end(), rest.begin(), rest.end());
  block->clear_ops();
  for (auto& op : ops) *block->add_ops() = std::move(op);
}

// Whole parameters from rank 0 everywhere, then each rank's slice, one
// state at a time.
void RewriteStartup(const std::map<std::string, int>& state, int tp,
                    proto::ProgramDesc* startup) {
  *startup = StartupWithBroadcasts(*startup);
  proto::BlockDesc* block = startup->mutable_blocks(0);
  for (auto& op : *block->mutable_ops())
    if (op.type() == "c_broadcast") SetOpAttr(&op, "ring_id", int32_t{0});
  for (const auto& kv : state) {
    proto::VarDesc* v = FindMutableVarDesc(block, kv.first);
    if (v == nullptr) continue;  // created elsewhere (a loaded state)
    SplitShape(v, kv.second, tp);
    *block->add_ops() =
        WithRole(MakeOp("c_split", {{"X", {kv.first}}}, {{"Out", {kv.first}}},
                        {{"axis", int32_t{kv.second}},
                         {"nranks", int32_t{tp}},
                         {"ring_id", kTensorParallelRing}}),
                 OpRole::kCollective);
  }
  InterleaveSlicing(block);
}

}  // namespace

void RefuseWithTensorParallel(const proto::TrainingJob& job,
                              const proto::DistributedStrategy& s) {
  auto refuse = [](bool set, const char* what) {
    FLUID_ENFORCE(!set, "tensor_parallel_degree > 1 does not compose with ",
                  what, " yet: turn one of them off");
  };
  refuse(s.amp() && s.amp_configs().dtype() == "fp16" && ShardStage(s) != 0,
         "fp16 loss scaling and optimizer-state sharding together (either "
         "alone composes)");
  // Sharded, a bucket's shard mixes split and replicated gradients, whose
  // squared norms the group must sum apart.
  bool clips = false;
  for (const auto& op : job.main().blocks(0).ops())
    clips |= op.type() == "squared_l2_norm" && HasRole(op, OpRole::kOptimize);
  refuse(ShardStage(s) != 0 && clips,
         "optimizer-state sharding and a global-norm gradient clip together "
         "(either alone composes)");
  RefuseSubBlocks(job.main(), "tensor parallelism",
                  "train the loop without tensor_parallel_degree");
}

namespace {

// The split parameters: what the startup program slices.
std::set<std::string> SlicedParams(const proto::ProgramDesc& startup) {
  std::set<std::string> out;
  for (const auto& op : startup.blocks(0).ops())
    if (op.type() == "c_split") out.insert(OpInput(op, "X")[0]);
  return out;
}

std::string TpRole(const proto::OpDesc& op) {
  return HasOpAttr(op, kTpRoleAttr) ? GetOpAttrAs<std::string>(op, kTpRoleAttr)
                                    : "";
}

bool IsGroupSumOf(const proto::OpDesc& op, const std::string& var) {
  return op.type() == "c_allreduce" &&
         OpInput(op, "X") == std::vector<std::string>{var} &&
         HasOpAttr(op, "ring_id") &&
         GetOpAttrAs<int32_t>(op, "ring_id") == kTensorParallelRing &&
         GetOpAttrAs<std::string>(op, "reduce_type") == "sum";
}

// Ops a split value may pass through (the plan's rules, checked again).
bool PassesSplit(const std::string& type) {
  static const std::set<std::string> ops = {
      "elementwise_add", "elementwise_sub", "elementwise_mul",
      "elementwise_div", "reshape",         "transpose",
      "matmul",          "softmax"};
  return IsSplitUnaryOp(type) || ops.count(type) > 0;
}

// Whether the op after #i sums `v` over the tensor-parallel group (the
// delete_var ops sharding stage 3 puts between, freeing a gathered
// parameter, aside).
bool SummedAfter(const proto::BlockDesc& block, int i, const std::string& v) {
  int j = i + 1;
  while (j < block.ops_size() && block.ops(j).type() == "delete_var") ++j;
  return j < block.ops_size() && IsGroupSumOf(block.ops(j), v);
}

void LintSplitMul(const proto::BlockDesc& block, int i,
                  const std::set<std::string>& split) {
  const proto::OpDesc& op = block.ops(i);
  const std::string role = TpRole(op);
  const std::string x = OpInput(op, "X")[0], y = OpInput(op, "Y")[0];
  const std::string out = OpOutput(op, "Out")[0];
  FLUID_ENFORCE(split.count(y), "the ", role, "-parallel mul #", i,
                " multiplies by '", y, "', which is not split");
  if (role == "column") {
    FLUID_ENFORCE(!split.count(x), "the column-parallel mul #", i, " reads '",
                  x, "', which is split already");
    return;
  }
  FLUID_ENFORCE(split.count(x), "the row-parallel mul #", i, " (weight '", y,
                "') reads '", x,
                "', which is not split: its rows would be summed twice");
  FLUID_ENFORCE(
      SummedAfter(block, i, out), "the row-parallel mul #", i,
      "'s partial product '", out,
      "' is not summed over the tensor-parallel group right after it");
}

// Forward: split values flow from the column muls to the row muls (or to
// a vocabulary-parallel loss).
void LintForward(const proto::BlockDesc& block,
                 const std::set<std::string>& params) {
  std::set<std::string> split = params;
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    if (HasRole(op, OpRole::kBackward) || HasRole(op, OpRole::kOptimize))
      continue;
    const std::string role = TpRole(op);
    if (op.type() == "c_embedding") {
      const std::string out = OpOutput(op, "Out")[0];
      FLUID_ENFORCE(SummedAfter(block, i, out),
                    "the vocabulary-parallel "
                    "lookup #",
                    i, "'s output '", out,
                    "' is not summed over the tensor-parallel group right "
                    "after it");
      continue;
    }
    if (op.type() == "c_softmax_with_cross_entropy") {
      const std::string logits = OpInput(op, "Logits")[0];
      FLUID_ENFORCE(split.count(logits), "the vocabulary-parallel loss #", i,
                    " reads '", logits,
                    "', which is not split: each rank would take the whole "
                    "row for its block of the classes");
      for (const auto& n : OpOutput(op, "Softmax")) split.insert(n);
      continue;
    }
    if (op.type() == "mul" && (role == "column" || role == "row")) {
      LintSplitMul(block, i, split);
      if (role == "column") split.insert(OpOutput(op, "Out")[0]);
      continue;
    }
    std::string read;
    for (const auto& n : OpInputNames(op))
      if (split.count(n)) read = n;
    // (Sharding stage 3 frees a gathered parameter after its last reader.)
    if (read.empty() || role == "reduce" || op.type() == "delete_var") continue;
    FLUID_ENFORCE(
        PassesSplit(op.type()), "op #", i, " (", op.type(), ") reads '", read,
        "', which tensor parallelism split; only the split muls and "
        "elementwise, reshape, transpose, matmul and softmax ops may");
    for (const auto& n : OpOutputNames(op)) split.insert(n);
  }
}

// Backward: each column mul's input gradient is summed over the group,
// right after its mul_grad or after the one sum op adding it to other such
// gradients only.

void LintBackward(const proto::BlockDesc& block) {
  for (int c = 0; c < block.ops_size(); ++c) {
    if (TpRole(block.ops(c)) != "column") continue;
    for (int i = 0; i < block.ops_size(); ++i) {
      if (!IsGradOf(block.ops(i), block.ops(c))) continue;
      const auto dx = OpOutput(block.ops(i), "X@GRAD");
      if (dx.empty() || dx[0].empty() || dx[0] == kEmptyVarName) continue;
      bool summed = SummedAfter(block, i, dx[0]);
      for (int j = i + 1; j < block.ops_size() && !summed; ++j)
        summed = block.ops(j).type() == "sum" &&
                 ReadsVar(block.ops(j), dx[0]) &&
                 SummedAfter(block, j, OpOutput(block.ops(j), "Out")[0]);
      FLUID_ENFORCE(summed, "the gradient '", dx[0],
                    "' of the column-parallel mul #", c,
                    "'s input is partial on each rank and is not summed over "
                    "the tensor-parallel group after its mul_grad #",
                    i);
    }
  }
}

}  // namespace

void LintTensorParallel(const proto::TrainingJob& job, int tp) {
  const std::set<std::string> params = SlicedParams(job.startup());
  // (A pipeline stage may hold none of the split layers.)
  FLUID_ENFORCE(!params.empty() || PipelineStages(job.strategy()) > 1,
                "tensor_parallel_degree is ", tp,
                " but the startup program slices no parameter");
  for (const auto& op : job.startup().blocks(0).ops())
    if (op.type() == "c_split")
      FLUID_ENFORCE(GetOpAttrAs<int32_t>(op, "nranks") == tp, "c_split of '",
                    OpInput(op, "X")[0], "' is planned for ",
                    GetOpAttrAs<int32_t>(op, "nranks"), " ranks, not ", tp);
  const proto::BlockDesc& block = job.main().blocks(0);
  LintForward(block, params);
  LintBackward(block);
}

int TensorParallelDegree(const proto::DistributedStrategy& s) {
  return s.has_tensor_parallel_degree() ? s.tensor_parallel_degree() : 1;
}

int TensorParallelDegree(const proto::DistributedStrategy& s, int nranks) {
  const int tp = TensorParallelDegree(s);
  FLUID_ENFORCE(nranks % tp == 0,
                "DistributedStrategy.tensor_parallel_degree (", tp,
                ") must divide the rank count (", nranks, ")");
  return tp;
}

proto::TrainingJob TensorParallelRewrite(const proto::TrainingJob& job,
                                         int tp) {
  RefuseWithTensorParallel(job, job.strategy());
  const auto& whole = job.strategy().tensor_parallel_configs().keep_whole();
  const TensorParallelPlan plan = PlanTensorParallel(
      job.main(), tp, std::set<std::string>(whole.begin(), whole.end()));
  proto::TrainingJob out = job;
  proto::BlockDesc* main = out.mutable_main()->mutable_blocks(0);
  const std::map<std::string, int> split = SplitVars(*main, plan);
  RewriteMain(plan, split, tp, main);
  RewriteStartup(SplitState(*main, split), tp, out.mutable_startup());
  return out;
}

void UseDataParallelRing(proto::ProgramDesc* program) {
  // The collectives, and shard_view, whose block is the rank's in its
  // ring.
  static const std::set<std::string> collectives = {
      "c_allreduce", "c_sparse_allreduce", "c_reducescatter", "c_allgather",
      "c_broadcast", "c_barrier",          "shard_view"};
  for (auto& block : *program->mutable_blocks())
    for (auto& op : *block.mutable_ops())
      if (collectives.count(op.type()) && !HasOpAttr(op, "ring_id"))
        SetOpAttr(&op, "ring_id", kDataParallelRing);
}

}  // namespace fluid
