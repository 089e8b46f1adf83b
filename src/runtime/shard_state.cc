#include "src/runtime/shard_state.h"

#include <algorithm>
#include <set>

#include "src/framework/enforce.h"
#include "src/framework/program_desc.h"
#include "transpiler/buckets.h"
#include "transpiler/sharding.h"
#include "transpiler/tensor_parallel.h"

namespace fluid {

void ShardState::Begin(const proto::TrainingJob& plain,
                       const proto::TrainingJob& prepared, Scope* scope,
                       bool create) {
  WaitGathers();  // of the job run before, if any
  scope_ = scope;
  sharded_ = IsSharded(prepared.main());
  gather_handles_.clear();
  for (const auto& v : prepared.main().blocks(0).vars())
    if (v.persistable() && v.type() == proto::VarDesc::COMM_HANDLE)
      gather_handles_.push_back(v.name());
  unsharded_main_.Clear();
  gather_.reset();
  gather_parameters_.reset();
  scatter_.reset();
  per_parameter_state_.clear();
  if (create && sharded_) CreateState(plain, prepared);
}

// The scope holds what `plain`'s startup made: run the part of the sharded
// startup that makes what is missing (the shards), then free what only
// the unsharded program read.
namespace {

// The parameter buffer (fused_param_<k>@COALESCED) an op of a stage 3
// startup touches, or "".
std::string BufferOf(const proto::OpDesc& op) {
  const std::string tag = "@COALESCED";
  for (const auto* names : {&op.inputs(), &op.outputs()})
    for (const auto& slot : *names)
      for (const auto& n : slot.arguments())
        if (n.rfind("fused_param_", 0) == 0 && n.find(tag) != std::string::npos)
          return n.substr(0, n.find(tag) + tag.size());
  return "";
}

}  // namespace

void ShardState::CreateState(const proto::TrainingJob& plain,
                             const proto::TrainingJob& prepared) {
  proto::ProgramDesc init = ShardStateStartup(prepared.startup());
  auto* ops = init.mutable_blocks(0)->mutable_ops();
  auto held = [&](const std::string& name) {
    Variable* v = scope_->FindVar(name);
    return v != nullptr && v->HasValue();
  };
  // What the scope holds already is not made again: a shard's state, or a
  // bucket's parameter shard (stage 3; the ops that make it from the
  // parameters go with it).
  for (int i = ops->size() - 1; i >= 0; --i) {
    const std::string buffer = BufferOf(ops->Get(i));
    const std::vector<std::string> outs = OpOutputNames(ops->Get(i));
    const bool state =
        !outs.empty() && std::all_of(outs.begin(), outs.end(), IsShardVar);
    const bool made = state             ? held(outs[0])
                      : !buffer.empty() ? held(ShardName(buffer))
                                        : false;
    if (made) ops->DeleteSubrange(i, 1);
  }
  if (!ops->empty()) exe_->RunOnce(init, scope_);
  std::set<std::string> kept;
  for (const auto* p : {&prepared.main(), &prepared.startup()})
    for (const auto& v : p->blocks(0).vars()) kept.insert(v.name());
  for (const auto& v : plain.startup().blocks(0).vars()) {
    Variable* var = scope_->FindVar(v.name());
    if (v.persistable() && !kept.count(v.name()) && var != nullptr &&
        var->IsTensor())
      *var->GetMutableTensor() = Tensor();  // frees it; the var stays
  }
}

void ShardState::Plan(const proto::TrainingJob& plain,
                      const proto::TrainingJob& prepared) {
  if (!sharded_ || IsSharded(plain.main())) return;
  unsharded_main_ = plain.main();
  ShardCheckpointPlan plan = PlanShardCheckpoint(plain, prepared);
  if (data_parallel_ring_)
    for (auto* p : {&plan.gather, &plan.gather_parameters, &plan.scatter})
      UseDataParallelRing(p);
  gather_ = exe_->Prepare(plan.gather, scope_);
  if (plan.gather_parameters.blocks(0).ops_size() > 0)
    gather_parameters_ = exe_->Prepare(plan.gather_parameters, scope_);
  scatter_ = exe_->Prepare(plan.scatter, scope_);
  per_parameter_state_ = plan.per_parameter_state;
  DropGathered();
}

bool ShardState::Restore(std::vector<std::pair<std::string, Tensor>>* held) {
  if (scatter_ == nullptr) return false;  // no plan: nothing was freed
  const proto::BlockDesc& block = unsharded_main_.blocks(0);
  for (auto& [name, value] : *held) {
    Variable* v = scope_->FindVar(name);
    const proto::VarDesc* desc = FindVarDesc(block, name);
    if (desc != nullptr && desc->persistable() && v != nullptr &&
        v->IsTensor() && !v->GetTensor().initialized())
      *v->GetMutableTensor() = std::move(value);
  }
  return true;
}

void ShardState::FenceStep() {
  pending_ = true;
  // Captures `this` only: held in place, no allocation per step.
  scope_->SetFence(this, [this] {
    pending_ = false;
    WaitHandles();
  });
}

void ShardState::WaitGathers() {
  if (!pending_) return;  // nothing in flight (or the scope is gone)
  pending_ = false;
  scope_->ClearFence(this);
  WaitHandles();
}

void ShardState::WaitHandles() {
  for (const auto& name : gather_handles_) {
    Variable* v = scope_->FindVar(name);
    if (v == nullptr || !v->HasValue()) continue;
    CommHandlePtr& handle = *v->GetMutable<CommHandlePtr>();
    if (handle == nullptr) continue;
    CommHandlePtr h = std::move(handle);
    handle.reset();
    h->Wait();
  }
}

const proto::ProgramDesc& ShardState::checkpoint_program(
    const proto::ProgramDesc& main) const {
  return unsharded_main_.blocks_size() > 0 ? unsharded_main_ : main;
}

void ShardState::Gather(bool parameters_only) {
  if (!sharded_) return;
  FLUID_ENFORCE_CODE(gather_ != nullptr, ErrorCode::kUnimplemented,
                     "checkpoints of a program transpiled with sharding "
                     "need its untranspiled program: give MPIExecutor the "
                     "plain program and a strategy with sharding");
  if (parameters_only && gather_parameters_ == nullptr) return;
  exe_->Run(parameters_only ? gather_parameters_.get() : gather_.get(), {}, {},
            nullptr);
}

// Frees the memory but keeps the vars (prepared programs point at them),
// shaped as declared, which is the shape the gather gives their views.
void ShardState::DropGathered() {
  if (gather_ == nullptr) return;
  // The full buffers the gathers laid the state out in (and their padding
  // views) hold the memory too: a coalesced buffer is never released by
  // eager deletion.
  for (const PreparedProgram* p :
       {gather_.get(), gather_parameters_.get(), scatter_.get()}) {
    if (p == nullptr) continue;
    for (const auto& op : p->program().blocks(0).ops()) {
      if (op.type() != "coalesce_tensor") continue;
      std::vector<std::string> held = OpOutput(op, "FusedOutput");
      for (const auto& n : OpOutput(op, "Output"))
        if (std::find(per_parameter_state_.begin(), per_parameter_state_.end(),
                      n) == per_parameter_state_.end())
          held.push_back(n);
      for (const auto& n : held) {
        Variable* v = p->local_scope()->FindVar(n);
        if (v != nullptr && v->IsTensor()) *v->GetMutableTensor() = Tensor();
      }
    }
  }
  const proto::BlockDesc& block = unsharded_main_.blocks(0);
  for (const auto& name : per_parameter_state_) {
    Variable* v = scope_->FindVar(name);
    if (v == nullptr) continue;
    const proto::VarDesc& desc = GetVarDesc(block, name);
    Tensor shaped;
    shaped.set_dtype(VarDtype(desc));
    shaped.Resize(VarShape(desc));
    *v->GetMutableTensor() = shaped;
  }
}

void ShardState::ScatterLoaded() {
  if (scatter_ == nullptr) return;
  bool loaded = true;
  for (const auto& name : per_parameter_state_) {
    Variable* v = scope_->FindVar(name);
    loaded =
        loaded && v != nullptr && v->IsTensor() && v->GetTensor().initialized();
  }
  // Rank 0's. Not all loaded (a startup that left the accumulators to the
  // shards): the shards made by CreateState stand, and the whole values
  // Restore put back are dropped.
  if (comm_->AllGatherValue(loaded ? 1 : 0)[0] == 0) return DropGathered();
  for (const auto& name : per_parameter_state_) {
    Tensor* t = scope_->FindVar(name)->GetMutableTensor();
    if (!t->initialized()) t->raw_mutable_data();  // shaped as declared
    comm_->Broadcast(*t, 0);
  }
  exe_->Run(scatter_.get(), {}, {}, nullptr);
  DropGathered();
}

}  // namespace fluid
