#include "transpiler/pipeline.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "src/framework/enforce.h"
#include "src/framework/grad_op_maker.h"
#include "src/framework/gradient_merge_state.h"
#include "src/framework/loss_scaling_state.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/control_flow_lint.h"
#include "transpiler/pipeline_plan.h"
#include "transpiler/program_query.h"
#include "transpiler/recompute.h"
#include "transpiler/strategy.h"
#include "transpiler/tensor_parallel.h"

namespace fluid {

namespace {

constexpr const char* kPrefix = "pipeline: ";
constexpr const char* kSubBlockAttr = "sub_block";

// Micro-batch k's name of `name`: "x@MB<k>", and "x@MB<k>@GRAD" for x's
// gradient, so that a renamed var's gradient is named as the autodiff
// names gradients (GradVarName): while_grad and conditional_block_grad
// find the gradients of their inputs by that name in their blocks.
std::string MbName(const std::string& name, int k) {
  const size_t at = name.find(kGradSuffix);
  const std::string mb = "@MB" + std::to_string(k);
  if (at == std::string::npos) return name + mb;
  return name.substr(0, at) + mb + name.substr(at);
}

// One stage's ops of the plain program, by phase (indices into it).
struct StageOps {
  // merge: gradient merge's ops on a gradient's accumulator (its
  // accumulation, scaling and reset), once per step after the
  // micro-batches' sum.
  std::vector<int> step, forward, backward, merge, optimize;
};

// Whether a backward op is gradient merge's, on an accumulator.
bool IsMergeOp(const proto::OpDesc& op) {
  for (const auto& names : {OpInputNames(op), OpOutputNames(op)})
    for (const std::string& n : names)
      if (IsGradMergeAccumulatorName(n)) return true;
  return false;
}

class Rewriter {
 public:
  Rewriter(const proto::TrainingJob& job, int stages)
      : job_(job),
        src_(job.main().blocks(0)),
        stages_(stages),
        m_(MicroBatches(job.strategy())),
        schedule_(PipelineSchedule(job.strategy())),
        ahead_(ForwardsAhead(job.strategy())),
        plan_(PlanPipeline(src_, stages)) {}

  proto::TrainingJob Run();

 private:
  bool Persistable(const std::string& n) const {
    const proto::VarDesc* v = FindVarDesc(src_, n);
    return v != nullptr && v->persistable();
  }
  void Classify();
  void FindFusedAccumulations();
  void FindCrossings();
  void Declare(const std::string& name, const std::string& like);
  std::string Rename(const std::string& n, int k, bool keep_grads) const;
  bool LocalTo(int block, const std::string& n) const;
  std::string RenameInner(int block, const std::string& n, int k) const;
  int CloneBlock(int block, int k);
  void Emit(proto::OpDesc op, int stage);
  void EmitCopy(int i, int stage, int k, bool keep_grads);
  void EmitP2P(bool send, bool forward, int boundary, const std::string& v,
               int k, int stage);
  void EmitForward(int s, int k);
  void EmitBackward(int s, int k, bool first);
  void EmitSparseSums(int s);
  void EmitMetrics(int s);
  void EmitStage(int s);
  void EmitSplitSum(int i, int s);
  void EmitSplitStages(int i, int s);
  void PlaceEarlyReceives();

  const proto::TrainingJob& job_;
  const proto::BlockDesc& src_;
  const int stages_, m_;
  const std::string schedule_;
  const int ahead_;
  const PipelinePlan plan_;
  // Whether the stage being emitted has run its last micro-batch's
  // forward, which advances the dropout counters.
  bool advanced_ = false;
  std::vector<StageOps> ops_;
  std::set<std::string> feeds_, param_grads_, metrics_;
  // Parameters' gradients that hold sparse rows (an embedding's with
  // is_sparse): every micro-batch's are kept apart and concatenated after
  // the last backward (`sum`), since rows cannot be added in place.
  std::set<std::string> sparse_grads_;
  // Parameters' gradients that one mul_grad alone writes (its Y@GRAD) and
  // no other backward op reads: the micro-batches after the first add into
  // them inside the product (its YGradIn), with no elementwise_add after.
  std::set<std::string> fused_grads_;
  std::map<std::string, int> grad_stage_;  // gradient -> its writer's stage
  // Per cut b: the values stage b sends forward, the gradients stage b + 1
  // sends back.
  std::vector<std::vector<std::string>> fwd_cross_, bwd_cross_;
  std::vector<std::vector<std::string>> handles_;  // per stage: sends
  // The stage being emitted's receives, issued ahead of their waits: each
  // goes before op `at` of out_ (PlaceEarlyReceives). A value's receive
  // of micro-batch k is issued right after its wait of micro-batch k - 1
  // (recv_at_, per direction, cut and value); micro-batch 0's where the
  // stage's schedule begins.
  struct EarlyReceive {
    int at;
    proto::OpDesc op;
  };
  std::vector<EarlyReceive> early_;
  std::map<std::tuple<bool, int, std::string>, int> recv_at_;
  int schedule_begin_ = 0;
  proto::ProgramDesc* program_ = nullptr;
  proto::BlockDesc* out_ = nullptr;
  // (sub-block, micro-batch) -> its copy for that micro-batch.
  std::map<std::pair<int, int>, int> clones_;
};

void Rewriter::Classify() {
  ops_.assign(stages_, StageOps{});
  std::set<std::string> written;
  for (int i = 0; i < src_.ops_size(); ++i) {
    const proto::OpDesc& op = src_.ops(i);
    for (const std::string& n : OpInputNames(op))
      if (!written.count(n) && !Persistable(n) && n != kEmptyVarName)
        feeds_.insert(n);
    for (const std::string& n : OpOutputNames(op)) written.insert(n);
  }
  for (const auto& [param, grad] : OptimizedParams(job_.main())) {
    param_grads_.insert(grad);
    const proto::VarDesc* g = FindVarDesc(src_, grad);
    if (g != nullptr && g->type() == proto::VarDesc::SELECTED_ROWS)
      sparse_grads_.insert(grad);
  }
  // The data-only ops each stage needs, in program order.
  std::vector<std::set<std::string>> needed(stages_);
  for (const auto& [i, s] : plan_.stage) {
    if (plan_.data_only.count(i) || s < 0) continue;
    for (const std::string& n : OpInputNames(src_.ops(i))) needed[s].insert(n);
  }
  std::vector<std::set<int>> data_ops(stages_);
  for (int i = src_.ops_size() - 1; i >= 0; --i) {
    if (!plan_.data_only.count(i)) continue;
    for (int s = 0; s < stages_; ++s) {
      bool used = false;
      for (const std::string& n : OpOutputNames(src_.ops(i)))
        used = used || needed[s].count(n) > 0;
      if (!used) continue;
      data_ops[s].insert(i);
      for (const std::string& n : OpInputNames(src_.ops(i)))
        needed[s].insert(n);
    }
  }
  for (int i = 0; i < src_.ops_size(); ++i) {
    const proto::OpDesc& op = src_.ops(i);
    for (int s = 0; s < stages_; ++s) {
      const bool mine = plan_.data_only.count(i)
                            ? data_ops[s].count(i) > 0
                            : (plan_.stage.at(i) == s || plan_.stage.at(i) < 0);
      if (!mine) continue;
      if (plan_.step_ops.count(i)) {
        ops_[s].step.push_back(i);
      } else if (HasRole(op, OpRole::kBackward)) {
        (IsMergeOp(op) ? ops_[s].merge : ops_[s].backward).push_back(i);
      } else if (HasRole(op, OpRole::kOptimize)) {
        ops_[s].optimize.push_back(i);
      } else {
        ops_[s].forward.push_back(i);
      }
    }
  }
  FindFusedAccumulations();
}

// A float gradient of a weight whose one backward op is a mul_grad writing
// it as Y@GRAD (an fc layer's weight, used once) accumulates over the
// micro-batches inside that product: mul_grad's YGradIn, in place. That
// saves an elementwise_add a micro-batch, which reads and writes the whole
// gradient (about 5% of a stage's time in a stack of fc layers), and the
// micro-batch's copy of the gradient. A gradient that other backward ops
// touch (a weight used twice, summed) keeps the add.
void Rewriter::FindFusedAccumulations() {
  std::map<std::string, int> touched;
  std::map<std::string, const proto::OpDesc*> writer;
  for (const proto::OpDesc& op : src_.ops()) {
    if (!HasRole(op, OpRole::kBackward) || IsMergeOp(op)) continue;
    std::set<std::string> names;
    for (const std::string& n : OpInputNames(op)) names.insert(n);
    for (const std::string& n : OpOutputNames(op)) names.insert(n);
    for (const std::string& n : names) {
      if (!param_grads_.count(n) || sparse_grads_.count(n)) continue;
      ++touched[n];
      writer[n] = &op;
    }
  }
  for (const auto& [g, count] : touched) {
    const proto::OpDesc& op = *writer.at(g);
    if (count != 1 || op.type() != "mul_grad" ||
        OpOutput(op, GradSlot("Y")) != std::vector<std::string>{g} ||
        OpOutput(op, GradSlot("X")) == std::vector<std::string>{g})
      continue;
    const proto::VarDesc* v = FindVarDesc(src_, g);
    if (v == nullptr) continue;
    const DataType t = VarDtype(*v);
    if (t == DataType::kFloat32 || t == DataType::kFloat64)
      fused_grads_.insert(g);
  }
}

// Values read on a stage but made on another: forward values from the
// stage before, gradients from the stage after.
void Rewriter::FindCrossings() {
  fwd_cross_.assign(stages_, {});
  bwd_cross_.assign(stages_, {});
  grad_stage_.clear();
  for (int s = 0; s < stages_; ++s)
    for (int i : ops_[s].backward)
      for (const std::string& n : OpOutputNames(src_.ops(i)))
        grad_stage_.emplace(n, s);
  auto add = [](std::vector<std::string>* list, const std::string& n) {
    if (std::find(list->begin(), list->end(), n) == list->end())
      list->push_back(n);
  };
  // In program order: a gradient read is the latest write of it before
  // the reader (a loop-carried var's gradient flows in as Out@GRAD and
  // out as X@GRAD under one name, written on two stages).
  std::map<int, std::vector<std::pair<int, bool>>> runs;  // op -> (stage, bwd)
  for (int s = 0; s < stages_; ++s) {
    for (int i : ops_[s].forward) runs[i].push_back({s, false});
    for (int i : ops_[s].backward) runs[i].push_back({s, true});
  }
  std::map<std::string, int> written;  // gradient -> its latest writer's stage
  for (const auto& [i, stages] : runs) {
    for (const auto& [s, backward] : stages) {
      for (const std::string& n : OpInputNames(src_.ops(i))) {
        if (Persistable(n) || n == kEmptyVarName) continue;
        auto v = plan_.value_stage.find(n);
        if (v != plan_.value_stage.end() && v->second >= 0 && v->second != s &&
            !grad_stage_.count(n)) {
          FLUID_ENFORCE(v->second == s - 1, kPrefix, "stage ", s, " reads ",
                        Quote(n), " made on stage ", v->second,
                        "; a value crosses one cut at a time");
          add(&fwd_cross_[s - 1], n);
        }
        auto g = written.find(n);
        if (!backward || g == written.end() || g->second == s) continue;
        FLUID_ENFORCE(g->second == s + 1, kPrefix, "stage ", s,
                      " reads the gradient ", Quote(n), " made on stage ",
                      g->second, "; a gradient crosses one cut at a time");
        add(&bwd_cross_[s], n);
      }
    }
    for (const auto& [s, backward] : stages)
      if (backward)
        for (const std::string& n : OpOutputNames(src_.ops(i))) written[n] = s;
  }
  // The last stage's scalar results: floats (a loss, an accuracy)
  // averaged over the micro-batches, integers (an accuracy's counts)
  // summed, then broadcast to every stage.
  // (The loss read by fp16's scaling of it is still a result.)
  std::set<std::string> read;
  for (int i : ops_[stages_ - 1].forward) {
    const proto::OpDesc& op = src_.ops(i);
    if (op.type() == "elementwise_mul" && OpInput(op, "Y").size() == 1 &&
        OpInput(op, "Y")[0] == kLossScalingVar)
      continue;
    for (const std::string& n : OpInputNames(op)) read.insert(n);
  }
  for (int i : ops_[stages_ - 1].forward) {
    if (plan_.data_only.count(i)) continue;
    for (const std::string& n : OpOutputNames(src_.ops(i))) {
      const proto::VarDesc* v = FindVarDesc(src_, n);
      if (v == nullptr || v->persistable() || read.count(n)) continue;
      const Shape shape = VarShape(*v);
      const DataType t = VarDtype(*v);
      if (shape.rank() == 1 && shape[0] == 1 &&
          (t == DataType::kFloat32 || t == DataType::kFloat64 ||
           t == DataType::kInt32 || t == DataType::kInt64))
        metrics_.insert(n);
    }
  }
}

void Rewriter::Declare(const std::string& name, const std::string& like) {
  if (FindVarDesc(*out_, name) != nullptr) return;
  const proto::VarDesc* v = FindVarDesc(src_, like);
  if (v == nullptr) return;  // undeclared in the plain program too
  proto::VarDesc* d = out_->add_vars();
  *d = *v;
  d->set_name(name);
}

// Micro-batch k's name of `n`: persistables keep theirs, and so do the
// parameters' gradients of the first backward a stage runs (`keep_grads`);
// the later ones' are summed into them.
std::string Rewriter::Rename(const std::string& n, int k,
                             bool keep_grads) const {
  if (n == kEmptyVarName || Persistable(n)) return n;
  if (keep_grads && param_grads_.count(n) && !sparse_grads_.count(n)) return n;
  if (fused_grads_.count(n)) return n;  // added into by every micro-batch
  return MbName(n, k);
}

// Whether `n` is declared in sub-block `block` or an enclosing sub-block
// (a var of the loop's own, in its step scopes), not in block 0.
bool Rewriter::LocalTo(int block, const std::string& n) const {
  const proto::ProgramDesc& p = job_.main();
  for (int b = block; b > 0; b = p.blocks(b).parent_idx())
    if (FindVarDesc(p.blocks(b), n) != nullptr) return true;
  return false;
}

// Micro-batch k's name of `n` in a copy of sub-block `block`: the block's
// own vars keep theirs (each run of the loop has its step scopes); a var
// of block 0, and the gradient of one ("x@GRAD", the block's own
// declaration of the gradient that flows into x), take the names block
// 0's ops give them. Persistables keep theirs.
std::string Rewriter::RenameInner(int block, const std::string& n,
                                  int k) const {
  const std::string base = n.substr(0, n.find(kGradSuffix));
  if (n == kEmptyVarName || LocalTo(block, base) || Persistable(base) ||
      FindVarDesc(src_, base) == nullptr)
    return n;
  return MbName(n, k);
}

// A copy of sub-block `block` (and of the blocks its ops run) for
// micro-batch k, renamed as RenameInner says; returns its index. A
// gradient block's copy is a kid of its loop body's copy for the same
// micro-batch (made first: a forward precedes its backward).
int Rewriter::CloneBlock(int block, int k) {
  auto it = clones_.find({block, k});
  if (it != clones_.end()) return it->second;
  const proto::BlockDesc& orig = job_.main().blocks(block);
  const int idx = program_->blocks_size();
  clones_[{block, k}] = idx;
  proto::BlockDesc* copy = program_->add_blocks();
  *copy = orig;
  copy->set_idx(idx);
  auto parent = clones_.find({orig.parent_idx(), k});
  if (parent != clones_.end()) copy->set_parent_idx(parent->second);
  for (auto& v : *copy->mutable_vars())
    v.set_name(RenameInner(block, v.name(), k));
  for (auto& op : *copy->mutable_ops()) {
    for (auto* slots : {op.mutable_inputs(), op.mutable_outputs()})
      for (auto& slot : *slots)
        for (auto& name : *slot.mutable_arguments())
          name = RenameInner(block, name, k);
    if (HasOpAttr(op, kSubBlockAttr))
      SetOpAttr(&op, kSubBlockAttr,
                static_cast<int32_t>(
                    CloneBlock(GetOpAttrAs<int32_t>(op, kSubBlockAttr), k)));
  }
  return idx;
}

void Rewriter::Emit(proto::OpDesc op, int stage) {
  SetOpAttr(&op, kPipelineStageAttr, static_cast<int32_t>(stage));
  *out_->add_ops() = std::move(op);
}

void Rewriter::EmitCopy(int i, int stage, int k, bool keep_grads) {
  proto::OpDesc op = src_.ops(i);
  for (auto* slots : {op.mutable_inputs(), op.mutable_outputs()}) {
    for (auto& slot : *slots) {
      for (auto& name : *slot.mutable_arguments()) {
        const std::string renamed = Rename(name, k, keep_grads);
        Declare(renamed, name);
        name = renamed;
      }
    }
  }
  if (op.type() == "dropout" || op.type() == "dropout_grad") {
    SetOpAttr(&op, kMicroBatchAttr, static_cast<int32_t>(k));
    // The mask varies with the data-parallel rank only: the stages of one
    // pipeline drop what one process drops.
    SetOpAttr(&op, "ring_id", kDataParallelRing);
    // The step counter advances once per batch: on the last micro-batch.
    if (op.type() == "dropout" && k != m_ - 1) SetOpOutput(&op, "StepOut", {});
    // A recompute replay draws its forward op's mask: Step as that op read
    // it, which is one back once the last micro-batch's forward has run.
    // (Its gradient op, reading the replay's mask, carries the same attrs.)
    const bool replay =
        op.type() == "dropout"
            ? HasOpAttr(op, "replay_of") &&
                  !GetOpAttrAs<std::string>(op, "replay_of").empty()
            : OpInput(src_.ops(i), "Mask").at(0).rfind(kRecomputeSuffix) !=
                  std::string::npos;
    if (replay && !advanced_) SetOpAttr(&op, "replay_step", int32_t{0});
  }
  // A loop or a conditional block runs its block's copy for micro-batch k.
  if (HasOpAttr(op, kSubBlockAttr))
    SetOpAttr(&op, kSubBlockAttr,
              static_cast<int32_t>(
                  CloneBlock(GetOpAttrAs<int32_t>(op, kSubBlockAttr), k)));
  if (!keep_grads && op.type() == "mul_grad") {
    const std::vector<std::string> dy = OpOutput(op, GradSlot("Y"));
    if (dy.size() == 1 && fused_grads_.count(dy[0]))
      SetOpInput(&op, "YGradIn", dy);
  }
  if (HasRole(op, OpRole::kLoss) && HasRole(op, OpRole::kBackward) &&
      op.type() == "fill_constant")
    SetOpAttr(&op, "value", GetOpAttrAs<float>(op, "value") / m_);
  Emit(std::move(op), stage);
}

void Rewriter::EmitP2P(bool send, bool forward, int boundary,
                       const std::string& v, int k, int stage) {
  const int32_t ring =
      (forward ? kPipelineForwardRing : kPipelineBackwardRing) + boundary % 2;
  // In a cut's two-rank rings the earlier stage is rank 0.
  const int32_t peer = stage == boundary ? 1 : 0;
  const std::string name = MbName(v, k);
  Declare(name, v);
  const OpRole role = forward ? OpRole::kForward : OpRole::kBackward;
  proto::OpDesc op;
  if (send) {
    const std::string handle = name + kSendHandleSuffix;
    AddVarDesc(out_, handle, DataType::kFloat32, Shape{})
        ->set_type(proto::VarDesc::COMM_HANDLE);
    handles_[stage].push_back(handle);
    op = MakeOp("send_v2", {{"X", {name}}}, {{"Handle", {handle}}},
                {{"ring_id", ring},
                 {"peer", peer},
                 {kMicroBatchAttr, static_cast<int32_t>(k)}});
  } else {
    const proto::VarDesc& d = GetVarDesc(src_, v);
    const std::string handle = name + kRecvHandleSuffix;
    AddVarDesc(out_, handle, DataType::kFloat32, Shape{})
        ->set_type(proto::VarDesc::COMM_HANDLE);
    proto::OpDesc recv =
        MakeOp("recv_v2", {}, {{"Out", {name}}, {"Handle", {handle}}},
               {{"ring_id", ring},
                {"peer", peer},
                {kMicroBatchAttr, static_cast<int32_t>(k)},
                {"dtype", static_cast<int32_t>(VarDtype(d))},
                {"out_shape", VarShape(d).ToVector()}});
    SetOpAttr(&recv, kPipelineStageAttr, static_cast<int32_t>(stage));
    const auto key = std::make_tuple(forward, boundary, v);
    auto it = recv_at_.find(key);
    early_.push_back({it == recv_at_.end() ? schedule_begin_ : it->second,
                      WithRole(std::move(recv), role)});
    op = MakeOp("c_wait", {{"Handle", {handle}}}, {{"Out", {name}}});
    Emit(WithRole(std::move(op), role), stage);
    recv_at_[key] = out_->ops_size();
    return;
  }
  Emit(WithRole(std::move(op), role), stage);
}

// Inserts the stage's early receives (EmitP2P) before the ops they precede;
// receives before one op keep the order they were emitted in, which is
// their channel's message order.
void Rewriter::PlaceEarlyReceives() {
  std::stable_sort(
      early_.begin(), early_.end(),
      [](const EarlyReceive& a, const EarlyReceive& b) { return a.at < b.at; });
  google::protobuf::RepeatedPtrField<proto::OpDesc> ops;
  ops.Swap(out_->mutable_ops());
  size_t next = 0;
  for (int i = 0; i <= ops.size(); ++i) {
    while (next < early_.size() && early_[next].at == i)
      *out_->add_ops() = std::move(early_[next++].op);
    if (i < ops.size()) *out_->add_ops() = std::move(*ops.Mutable(i));
  }
  early_.clear();
  recv_at_.clear();
}

void Rewriter::EmitForward(int s, int k) {
  if (s > 0)
    for (const std::string& v : fwd_cross_[s - 1])
      EmitP2P(false, true, s - 1, v, k, s);
  for (int i : ops_[s].forward) EmitCopy(i, s, k, false);
  if (s + 1 < stages_)
    for (const std::string& v : fwd_cross_[s]) EmitP2P(true, true, s, v, k, s);
}

void Rewriter::EmitBackward(int s, int k, bool first) {
  if (s + 1 < stages_)
    for (const std::string& g : bwd_cross_[s])
      EmitP2P(false, false, s, g, k, s);
  std::set<std::string> written;
  for (int i : ops_[s].backward) {
    EmitCopy(i, s, k, first);
    for (const std::string& n : OpOutputNames(src_.ops(i)))
      if (param_grads_.count(n) && !sparse_grads_.count(n) &&
          !fused_grads_.count(n))
        written.insert(n);
  }
  if (s > 0)
    for (const std::string& g : bwd_cross_[s - 1])
      EmitP2P(true, false, s - 1, g, k, s);
  if (first) return;
  for (const std::string& g : written)
    Emit(WithRole(MakeOp("elementwise_add", {{"X", {g}}, {"Y", {MbName(g, k)}}},
                         {{"Out", {g}}}),
                  OpRole::kBackward),
         s);
}

// A sparse gradient's micro-batches' rows, concatenated in micro-batch
// order: the rows one process's lookup of the whole batch yields.
void Rewriter::EmitSparseSums(int s) {
  for (const std::string& g : sparse_grads_) {
    auto it = grad_stage_.find(g);
    if (it == grad_stage_.end() || it->second != s) continue;
    std::vector<std::string> parts;
    for (int k = 0; k < m_; ++k) parts.push_back(MbName(g, k));
    Emit(WithRole(MakeOp("sum", {{"X", parts}}, {{"Out", {g}}}),
                  OpRole::kBackward),
         s);
  }
}

void Rewriter::EmitMetrics(int s) {
  for (const std::string& n : metrics_) {
    const proto::VarDesc& v = GetVarDesc(src_, n);
    const DataType t = VarDtype(v);
    if (s == stages_ - 1) {
      std::vector<std::string> parts;
      for (int k = 0; k < m_; ++k) parts.push_back(MbName(n, k));
      Emit(WithRole(MakeOp("sum", {{"X", parts}}, {{"Out", {n}}}),
                    OpRole::kForward),
           s);
      if (t == DataType::kFloat32 || t == DataType::kFloat64)
        Emit(WithRole(MakeOp("scale", {{"X", {n}}}, {{"Out", {n}}},
                             {{"scale", 1.0f / m_}}),
                      OpRole::kForward),
             s);
    } else {
      Emit(WithRole(MakeOp("fill_constant", {}, {{"Out", {n}}},
                           {{"shape", std::vector<int64_t>{1}},
                            {"value", 0.0f},
                            {"dtype", static_cast<int32_t>(t)}}),
                    OpRole::kForward),
           s);
    }
    Emit(WithRole(MakeOp("c_broadcast", {{"X", {n}}}, {{"Out", {n}}},
                         {{"root", static_cast<int32_t>(stages_ - 1)},
                          {"ring_id", kPipelineRing}}),
                  OpRole::kForward),
         s);
  }
}

void Rewriter::EmitStage(int s) {
  std::set<std::string> feeds;
  for (const auto* phase : {&ops_[s].forward, &ops_[s].backward})
    for (int i : *phase)
      for (const std::string& n : OpInputNames(src_.ops(i)))
        if (feeds_.count(n)) feeds.insert(n);
  for (const std::string& f : feeds) {
    std::vector<std::string> parts;
    for (int k = 0; k < m_; ++k) {
      parts.push_back(MbName(f, k));
      Declare(parts.back(), f);
    }
    // A batch of sequences is cut into whole sequences, m equal groups.
    const proto::VarDesc* v = FindVarDesc(src_, f);
    const bool sequences = v != nullptr && v->lod_level() > 0;
    Emit(WithRole(sequences
                      ? MakeOp("split_lod_batch", {{"X", {f}}},
                               {{"Out", parts}}, {{"num", int32_t{m_}}})
                      : MakeOp("split", {{"X", {f}}}, {{"Out", parts}},
                               {{"axis", int32_t{0}}, {"num", int32_t{m_}}}),
                  OpRole::kForward),
         s);
  }
  for (int i : ops_[s].step) Emit(src_.ops(i), s);
  bool first = true;
  advanced_ = false;
  schedule_begin_ = out_->ops_size();
  for (const PipelineStep& step :
       StageSchedule(s, stages_, m_, schedule_, ahead_)) {
    if (step.forward) {
      EmitForward(s, step.micro_batch);
      advanced_ = advanced_ || step.micro_batch == m_ - 1;
    } else {
      EmitBackward(s, step.micro_batch, first);
      first = false;
    }
  }
  PlaceEarlyReceives();
  EmitSparseSums(s);
  EmitMetrics(s);
  for (const std::string& h : handles_[s])
    Emit(WithRole(MakeOp("c_wait", {{"Handle", {h}}}, {}), OpRole::kBackward),
         s);
  for (int i : ops_[s].merge) Emit(src_.ops(i), s);
  for (int i : ops_[s].optimize) {
    if (plan_.stage.at(i) == kSplitSum) {
      EmitSplitSum(i, s);
    } else if (plan_.stage.at(i) == kSplitStages) {
      EmitSplitStages(i, s);
    } else {
      Emit(src_.ops(i), s);
    }
  }
}

// This stage's part of a sum over every stage's values, then the sum of
// the parts over the pipeline.
void Rewriter::EmitSplitSum(int i, int s) {
  const proto::OpDesc& op = src_.ops(i);
  std::vector<std::string> mine;
  for (const std::string& n : OpInput(op, "X")) {
    auto it = plan_.optimize_value_stage.find(n);
    FLUID_ENFORCE(it != plan_.optimize_value_stage.end(), kPrefix,
                  "the sum over stages (", op.type(), ") reads ", Quote(n),
                  ", which no optimizer op of one stage writes");
    if (it->second == s) mine.push_back(n);
  }
  const std::string out = OpOutput(op, "Out").at(0);
  const proto::VarDesc& v = GetVarDesc(src_, out);
  if (mine.empty()) {
    Emit(WithRole(MakeOp("fill_constant", {}, {{"Out", {out}}},
                         {{"shape", VarShape(v).ToVector()},
                          {"value", 0.0f},
                          {"dtype", static_cast<int32_t>(VarDtype(v))}}),
                  OpRole::kOptimize),
         s);
  } else {
    proto::OpDesc part = op;
    SetOpInput(&part, "X", mine);
    Emit(part, s);
  }
  Emit(WithRole(MakeOp("c_allreduce", {{"X", {out}}}, {{"Out", {out}}},
                       {{"reduce_type", std::string("sum")},
                        {"ring_id", kPipelineRing}}),
                OpRole::kOptimize),
       s);
}

// fp16's check or loss-scale update over this stage's gradients only; the
// check's overflow flag then taken as the pipeline's maximum, so that every
// stage skips the same steps and updates its copy of the loss scale alike.
void Rewriter::EmitSplitStages(int i, int s) {
  proto::OpDesc op = src_.ops(i);
  std::vector<std::string> mine;
  for (const std::string& g : OpInput(op, "X")) {
    auto it = grad_stage_.find(g);
    if (it != grad_stage_.end() && it->second == s) mine.push_back(g);
  }
  FLUID_ENFORCE_CODE(!mine.empty(), ErrorCode::kUnimplemented, kPrefix,
                     "stage ", s, " updates no parameter, so fp16's ",
                     op.type(),
                     " has no gradient of it to check: give every stage a "
                     "parameter, or train in bf16");
  SetOpInput(&op, "X", mine);
  SetOpOutput(&op, "Out", mine);
  Emit(op, s);
  if (op.type() != "check_finite_and_unscale") return;
  const std::string found = OpOutput(op, "FoundInfinite").at(0);
  Emit(WithRole(MakeOp("c_allreduce", {{"X", {found}}}, {{"Out", {found}}},
                       {{"reduce_type", std::string("max")},
                        {"ring_id", kPipelineRing}}),
                OpRole::kOptimize),
       s);
}

proto::TrainingJob Rewriter::Run() {
  Classify();
  FindCrossings();
  proto::TrainingJob out = job_;
  program_ = out.mutable_main();
  out_ = program_->mutable_blocks(0);
  out_->clear_ops();
  handles_.assign(stages_, {});
  for (int s = 0; s < stages_; ++s) EmitStage(s);
  return out;
}

// Tensor parallelism's group sums (tp_role, role kCollective) with the
// role of the phase they sit in, so that they are cut and unrolled with
// it: before the first backward op forward, then backward, then with the
// optimizer.
proto::TrainingJob WithPhaseRoles(const proto::TrainingJob& job) {
  proto::TrainingJob out = job;
  OpRole phase = OpRole::kForward;
  for (auto& op : *out.mutable_main()->mutable_blocks(0)->mutable_ops()) {
    if (HasRole(op, OpRole::kOptimize)) {
      phase = OpRole::kOptimize;
    } else if (HasRole(op, OpRole::kBackward) && phase == OpRole::kForward) {
      phase = OpRole::kBackward;
    }
    if (HasRole(op, OpRole::kCollective) && HasOpAttr(op, kTpRoleAttr))
      op = WithRole(std::move(op), phase);
  }
  return out;
}

}  // namespace

bool IsPipelineStepCollective(const proto::OpDesc& op) {
  if (!HasOpAttr(op, kPipelineStageAttr)) return false;
  if (op.type() == "c_wait") {
    const std::vector<std::string> h = OpInput(op, "Handle");
    if (h.size() != 1) return false;
    for (const std::string suffix : {kSendHandleSuffix, kRecvHandleSuffix})
      if (h[0].size() > suffix.size() &&
          h[0].compare(h[0].size() - suffix.size(), suffix.size(), suffix) == 0)
        return true;
    return false;
  }
  return op.type() == "c_broadcast" && HasOpAttr(op, "ring_id") &&
         GetOpAttrAs<int32_t>(op, "ring_id") == kPipelineRing &&
         !HasRole(op, OpRole::kBackward) && !HasRole(op, OpRole::kOptimize);
}

int PipelineStages(const proto::DistributedStrategy& s) {
  return s.has_pipeline_stages() ? s.pipeline_stages() : 1;
}

int PipelineStages(const proto::DistributedStrategy& s, int nranks) {
  const int pp = PipelineStages(s);
  const int tp = TensorParallelDegree(s);
  FLUID_ENFORCE(nranks % (pp * tp) == 0,
                "DistributedStrategy.pipeline_stages (", pp,
                ") times tensor_parallel_degree (", tp,
                ") must divide the rank count (", nranks, ")");
  return pp;
}

const std::string& PipelineSchedule(const proto::DistributedStrategy& s) {
  return s.pipeline_configs().schedule();
}

int DataParallelWorld(const proto::DistributedStrategy& s, int nranks) {
  return nranks / (PipelineStages(s, nranks) * TensorParallelDegree(s));
}

int DataParallelColor(const proto::DistributedStrategy& s, int rank,
                      int nranks) {
  const int pp = PipelineStages(s, nranks), tp = TensorParallelDegree(s);
  return StageOf(rank, nranks, pp) * tp + rank % tp;
}

int DataParallelRank(const proto::DistributedStrategy& s, int rank,
                     int nranks) {
  return (rank / TensorParallelDegree(s)) % DataParallelWorld(s, nranks);
}

int MicroBatches(const proto::DistributedStrategy& s) {
  return s.pipeline_configs().micro_batches();
}

int ForwardsAhead(const proto::DistributedStrategy& s) {
  return s.pipeline_configs().forwards_ahead();
}

std::vector<PipelineStep> StageSchedule(int stage, int stages, int pieces,
                                        const std::string& schedule,
                                        int ahead) {
  FLUID_ENFORCE(schedule == "1F1B" || schedule == "FThenB", kPrefix,
                "unknown schedule ", Quote(schedule), " (1F1B or FThenB)");
  FLUID_ENFORCE(ahead >= 0, kPrefix, "pipeline_configs.forwards_ahead must ",
                "be >= 0, got ", ahead);
  FLUID_ENFORCE(ahead == 0 || schedule == "1F1B", kPrefix,
                "pipeline_configs.forwards_ahead = ", ahead,
                " applies to the 1F1B schedule; ", schedule,
                " already runs every forward first: set it to 0");
  std::vector<PipelineStep> out;
  if (schedule == "FThenB") {
    for (int k = 0; k < pieces; ++k) out.push_back({true, k});
    for (int k = 0; k < pieces; ++k) out.push_back({false, k});
    return out;
  }
  // The last stage runs each backward right after its forward: a forward
  // ahead there would only hold more activations.
  const int extra = stage + 1 < stages ? ahead : 0;
  const int warmup = std::min(stages - stage - 1 + extra, pieces);
  int f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back({true, f});
  while (f < pieces) {
    out.push_back({true, f++});
    out.push_back({false, b++});
  }
  while (b < pieces) out.push_back({false, b++});
  return out;
}

namespace {

// Recompute's backward ops read <v>@RECOMPUTE, a replay's copy of v. One on
// a stage other than v's reads v itself instead: v crossed the cut in the
// forward pass and is kept on this stage until the backward, while the
// replay's copy would have to cross the cut against the backward's
// direction.
proto::TrainingJob ReadCutValuesForReplays(const proto::TrainingJob& job,
                                           int stages) {
  proto::TrainingJob out = job;
  proto::BlockDesc* block = out.mutable_main()->mutable_blocks(0);
  const PipelinePlan plan = PlanPipeline(*block, stages);
  for (int i = 0; i < block->ops_size(); ++i) {
    proto::OpDesc* op = block->mutable_ops(i);
    if (!HasRole(*op, OpRole::kBackward)) continue;
    const int s = plan.stage.at(i);
    for (auto& slot : *op->mutable_inputs()) {
      for (auto& name : *slot.mutable_arguments()) {
        const size_t at = name.rfind(kRecomputeSuffix);
        if (at == std::string::npos ||
            at + std::strlen(kRecomputeSuffix) != name.size())
          continue;
        auto v = plan.value_stage.find(name.substr(0, at));
        if (v != plan.value_stage.end() && v->second >= 0 && v->second != s)
          name = name.substr(0, at);
      }
    }
  }
  return out;
}

}  // namespace

// A loop or conditional block runs whole on its op's stage, once per
// micro-batch: refuses a block whose ops were placed on another stage, and
// dropout inside one (its mask would not be cut per micro-batch).
void CheckSubBlocks(const proto::ProgramDesc& main, int block, int stage,
                    const proto::OpDesc& owner) {
  for (const proto::OpDesc& op : main.blocks(block).ops()) {
    if (HasOpAttr(op, kPipelineStageAttr) &&
        GetOpAttrAs<int32_t>(op, kPipelineStageAttr) != stage)
      FLUID_THROW(ErrorCode::kUnimplemented, kPrefix, "op '", op.type(),
                  "' of block ", block, " is placed on stage ",
                  GetOpAttrAs<int32_t>(op, kPipelineStageAttr), " but its '",
                  owner.type(), "' on stage ", stage,
                  "; a loop or conditional block runs whole on one stage: "
                  "place the whole loop in one fluid.pipeline_stage");
    FLUID_ENFORCE_CODE(op.type() != "dropout", ErrorCode::kUnimplemented,
                       kPrefix, "dropout in block ", block, " (run by '",
                       owner.type(),
                       "'): a pipeline draws dropout masks per micro-batch "
                       "in block 0 only; apply dropout outside the loop");
    if (HasOpAttr(op, kSubBlockAttr))
      CheckSubBlocks(main, GetOpAttrAs<int32_t>(op, kSubBlockAttr), stage,
                     owner);
  }
}

void CheckSubBlocks(const proto::ProgramDesc& main) {
  int stage = 0;  // an op without the attr takes the stage of the one before
  for (const proto::OpDesc& op : main.blocks(0).ops()) {
    if (HasOpAttr(op, kPipelineStageAttr))
      stage = GetOpAttrAs<int32_t>(op, kPipelineStageAttr);
    if (!HasOpAttr(op, kSubBlockAttr) || HasRole(op, OpRole::kBackward))
      continue;
    CheckSubBlocks(main, GetOpAttrAs<int32_t>(op, kSubBlockAttr), stage, op);
  }
}

proto::TrainingJob PipelineRewrite(const proto::TrainingJob& job) {
  const proto::DistributedStrategy& s = job.strategy();
  const int pp = PipelineStages(s);
  FLUID_ENFORCE(pp >= 2, kPrefix, "pipeline_stages is ", pp,
                "; a pipeline has 2 or more");
  CheckSubBlocks(job.main());
  proto::TrainingJob phased = WithPhaseRoles(job);
  if (s.recompute()) phased = ReadCutValuesForReplays(phased, pp);
  proto::TrainingJob out = Rewriter(phased, pp).Run();
  LintPipeline(out);
  return out;
}

}  // namespace fluid
