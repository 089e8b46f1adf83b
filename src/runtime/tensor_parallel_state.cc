#include "src/runtime/tensor_parallel_state.h"

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/pipeline.h"
#include "transpiler/program_query.h"
#include "transpiler/tensor_parallel.h"

namespace fluid {

namespace {

constexpr const char* kWholeSuffix = "@TP_WHOLE";

}  // namespace

void TensorParallelState::Begin(const proto::TrainingJob& prepared,
                                const proto::TrainingJob& plain, Scope* scope) {
  scope_ = scope;
  slices_.clear();
  axis_.clear();
  sliced_shape_.clear();
  tp_ = TensorParallelDegree(prepared.strategy());
  if (tp_ <= 1) return;
  TensorParallelDegree(prepared.strategy(), comm_->size());  // divides
  const int rank = comm_->rank();
  comm_->CreateGroup(kTensorParallelRing, DpRankOf(rank, tp_), rank);
  comm_->CreateGroup(
      kDataParallelRing,
      DataParallelColor(prepared.strategy(), rank, comm_->size()), rank);
  for (const auto* program : {&prepared.startup(), &plain.startup()}) {
    const proto::BlockDesc& startup = program->blocks(0);
    for (const auto& op : startup.ops()) {
      if (op.type() != "c_split") continue;
      const std::string name = OpInput(op, "X")[0];
      axis_[name] = GetOpAttrAs<int32_t>(op, "axis");
      sliced_shape_[name] = VarShape(GetVarDesc(startup, name));
    }
  }
}

bool TensorParallelState::HoldsWhole(const std::string& name) const {
  auto it = axis_.find(name);
  if (it == axis_.end()) return false;
  Variable* v = scope_->FindVar(name);
  if (v == nullptr || !v->IsTensor() || !v->GetTensor().initialized())
    return false;
  const Shape& have = v->GetTensor().shape();
  const Shape& slice = sliced_shape_.at(name);
  if (have == slice) return false;
  Shape whole = slice;
  whole[it->second] *= tp_;
  FLUID_ENFORCE(have == whole, "'", name, "' holds ", have,
                ", neither its slice ", slice, " nor its whole ", whole,
                " (tensor parallelism over ", tp_, " ranks)");
  return true;
}

void TensorParallelState::Plan(const proto::ProgramDesc& saved) {
  whole_ = saved;
  for (auto& v : *whole_.mutable_blocks(0)->mutable_vars()) {
    auto it = axis_.find(v.name());
    if (it == axis_.end()) continue;
    Shape s = VarShape(v);
    if (s[it->second] > 0) s[it->second] *= tp_;
    SetVarShape(&v, s);
  }
}

void TensorParallelState::Broadcast(const std::string& name) {
  Tensor* t = scope_->Var(name)->GetMutableTensor();
  const bool whole = comm_->AllGatherValue(HoldsWhole(name) ? 1 : 0)[0] != 0;
  if (!whole) {
    comm_->Group(kDataParallelRing)->Broadcast(*t, 0);
    return;
  }
  if (comm_->rank() != 0 && !HoldsWhole(name)) {
    Shape shape = sliced_shape_.at(name);
    shape[axis_.at(name)] *= tp_;
    Tensor fresh(t->dtype(), shape);
    fresh.raw_mutable_data(t->place());
    *t = fresh;
  }
  comm_->Broadcast(*t, 0);
}

Communicator* TensorParallelState::ReplicaGroup(const std::string& name) const {
  return IsSplit(name) && !HoldsWhole(name) ? comm_->Group(kDataParallelRing)
                                            : comm_;
}

void TensorParallelState::RunEach(const std::string& type,
                                  const std::vector<std::string>& vars,
                                  const std::string& suffix) {
  if (vars.empty()) return;
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  for (const auto& name : vars) {
    // Persistable, so that the whole copy stays in the scope after the run.
    const Tensor& t = scope_->FindVar(name)->GetTensor();
    AddVarDesc(block, name, t.dtype(), t.shape(), /*persistable=*/true);
    if (!suffix.empty()) {
      Shape whole = t.shape();
      whole[axis_.at(name)] *= tp_;
      AddVarDesc(block, name + suffix, t.dtype(), whole, true);
    }
    *block->add_ops() =
        WithRole(MakeOp(type, {{"X", {name}}}, {{"Out", {name + suffix}}},
                        {{"axis", int32_t{axis_.at(name)}},
                         {"nranks", int32_t{tp_}},
                         {"ring_id", kTensorParallelRing}}),
                 OpRole::kCollective);
  }
  exe_->RunOnce(program, scope_);
}

void TensorParallelState::SliceWhole() {
  if (!active()) return;
  scope_->Settle();
  // Every rank of a group cuts the same vars: a var is whole on all of them
  // or on none (they loaded, or started, alike).
  std::vector<std::string> whole;
  for (const auto& kv : axis_)
    if (HoldsWhole(kv.first)) whole.push_back(kv.first);
  RunEach("c_split", whole, "");
}

void TensorParallelState::Gather() {
  if (!active()) return;
  scope_->Settle();
  std::vector<std::string> vars;
  for (const auto& kv : axis_) {
    Variable* v = scope_->FindVar(kv.first);
    if (v != nullptr && v->IsTensor() && v->GetTensor().initialized())
      vars.push_back(kv.first);
  }
  RunEach("c_concat", vars, kWholeSuffix);
  slices_.clear();
  for (const auto& name : vars) {
    Tensor* t = scope_->Var(name)->GetMutableTensor();
    slices_.emplace_back(name, *t);
    *t = scope_->FindVar(name + kWholeSuffix)->GetTensor();
    scope_->Erase(name + kWholeSuffix);
  }
}

void TensorParallelState::DropGathered() {
  for (auto& [name, slice] : slices_)
    *scope_->Var(name)->GetMutableTensor() = std::move(slice);
  slices_.clear();
}

}  // namespace fluid
