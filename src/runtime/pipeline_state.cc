#include "src/runtime/pipeline_state.h"

#include <algorithm>

#include "src/framework/enforce.h"
#include "src/framework/program_desc.h"
#include "transpiler/buckets.h"
#include "transpiler/pipeline.h"
#include "transpiler/tensor_parallel.h"

namespace fluid {

namespace {

// Allocates `t` as `v` declares it, unless it holds a value.
void Allocate(const proto::VarDesc& v, Tensor* t) {
  if (t->initialized()) return;
  t->set_dtype(VarDtype(v));
  t->Resize(VarShape(v));
  t->raw_mutable_data();
}

// Frees another stage's var held here: its memory, not the variable, which
// programs prepared while it was gathered (an evaluation) still point at.
void Free(Scope* scope, const std::string& name) {
  Variable* v = scope->FindVar(name);
  if (v != nullptr && v->IsTensor()) *v->GetMutableTensor() = Tensor();
}

}  // namespace

void PipelineState::Begin(const proto::TrainingJob& plain, Scope* scope) {
  scope_ = scope;
  owner_.clear();
  gathered_.clear();
  pp_ = PipelineStages(plain.strategy());
  if (pp_ <= 1) return;
  const int n = comm_->size(), rank = comm_->rank();
  PipelineStages(plain.strategy(), n);  // divides
  const int width = n / pp_, pos = PositionInStage(rank, n, pp_);
  stage_ = StageOf(rank, n, pp_);
  comm_->CreateGroup(kDataParallelRing,
                     DataParallelColor(plain.strategy(), rank, n), rank,
                     "data-parallel, stage " + std::to_string(stage_));
  comm_->CreateGroup(kStageRing, stage_, rank,
                     "stage " + std::to_string(stage_));
  comm_->CreateGroup(kPipelineRing, pos, rank, "pipeline, every stage");
  for (int q = 0; q < 2; ++q) {
    // The cut of parity q next to this stage, and whether there is one.
    const int cut = stage_ % 2 == q ? stage_ : stage_ - 1;
    const bool paired = cut >= 0 && cut < pp_ - 1;
    const int color = paired ? cut * width + pos : pp_ * width + rank;
    const std::string between = "pipeline stages " + std::to_string(cut) +
                                " -> " + std::to_string(cut + 1);
    comm_->CreateGroup(kPipelineForwardRing + q, color, rank,
                       between + ", activations");
    comm_->CreateGroup(kPipelineBackwardRing + q, color, rank,
                       between + ", gradients");
  }
  // Cut as the transpiler cuts: after tensor parallelism's split, whose
  // pairs the cuts keep whole.
  const int tp = TensorParallelDegree(plain.strategy());
  const proto::TrainingJob all =
      PipelineRewrite(tp > 1 ? TensorParallelRewrite(plain, tp) : plain);
  for (int s = 0; s < pp_; ++s) {
    const proto::TrainingJob staged = PipelineStageJob(all, s);
    for (const auto& v : staged.main().blocks(0).vars()) {
      if (!v.persistable() || v.type() == proto::VarDesc::COMM_HANDLE) continue;
      auto [it, fresh] = owner_.emplace(v.name(), s);
      if (!fresh && it->second != s) it->second = -1;
    }
  }
  whole_ = plain.main();
}

Communicator* PipelineState::data_parallel_group() const {
  return active() ? comm_->Group(kDataParallelRing) : comm_;
}

void PipelineState::Gather() {
  if (!active()) return;
  scope_->Settle();
  Communicator* ring = comm_->Group(kPipelineRing);
  for (const auto& [name, owner] : owner_) {
    if (owner < 0) continue;
    Variable* var = scope_->Var(name);
    // What the owner holds (a sharded job's optimizer state is held whole
    // only while its own gather lasts: an evaluation's gathers none).
    const bool mine =
        owner == stage_ && var->IsTensor() && var->GetTensor().initialized();
    if (ring->AllGatherValue(mine ? 1 : 0)[owner] == 0) continue;
    if (owner != stage_) {
      Allocate(GetVarDesc(whole_.blocks(0), name), var->GetMutableTensor());
      gathered_.push_back(name);
    }
    ring->Broadcast(var->GetTensor(), owner);
  }
}

void PipelineState::DropGathered() {
  for (const std::string& name : gathered_) Free(scope_, name);
  gathered_.clear();
}

void PipelineState::BroadcastWithinStage(const proto::ProgramDesc& stage_main,
                                         int ring_id,
                                         const std::set<std::string>* only) {
  if (!active()) return;
  Communicator* ring = comm_->Group(ring_id);
  for (const auto& v : stage_main.blocks(0).vars()) {
    if (!v.persistable() || v.type() == proto::VarDesc::COMM_HANDLE) continue;
    if (only != nullptr && !only->count(v.name())) continue;
    // A shard is this rank's own (the sharded state scatters its own).
    if (IsShardVar(v.name())) continue;
    Variable* var = scope_->Var(v.name());
    const bool held = var->IsTensor() && var->GetTensor().initialized();
    const int64_t mine = held ? var->GetTensor().numel() : 0;
    const auto root = static_cast<int64_t>(
        ring->AllGatherValue(static_cast<uint64_t>(mine))[0]);
    if (root == 0) continue;  // the first rank holds none: nothing to give
    Tensor* t = var->GetMutableTensor();
    const proto::VarDesc* whole = FindVarDesc(whole_.blocks(0), v.name());
    const Shape shape = VarShape(whole != nullptr ? *whole : v);
    if (root < shape.numel()) {
      // A tensor-parallel slice (a split startup's): every rank holds its
      // own, the same as its data-parallel ring's.
      FLUID_ENFORCE(mine == root, "pipeline: stage ", stage_, "'s rank ",
                    comm_->rank(), " holds ", mine, " elements of ",
                    Quote(v.name()), ", its first rank a slice of ", root);
      comm_->Group(kDataParallelRing)->Broadcast(*t, 0);
      continue;
    }
    if (mine != root) {  // it holds it whole, this rank a slice or nothing
      FLUID_ENFORCE(shape.numel() == root, "pipeline: stage ", stage_,
                    "'s first rank holds ", root, " elements of ",
                    Quote(v.name()), ", declared ", shape);
      *t = Tensor();
      Allocate(whole != nullptr ? *whole : v, t);
    }
    ring->Broadcast(*t, 0);
  }
}

bool PipelineState::AnyRank(bool mine) {
  if (!active()) return mine;
  const std::vector<uint64_t> all = comm_->AllGatherValue(mine ? 1 : 0);
  return std::find(all.begin(), all.end(), 1u) != all.end();
}

void PipelineState::DropOtherStages() {
  if (!active()) return;
  for (const auto& [name, owner] : owner_)
    if (owner >= 0 && owner != stage_) Free(scope_, name);
}

void PipelineState::BroadcastLoaded() {
  if (!active()) return;
  scope_->Settle();
  const int n = comm_->size();
  // Rank 0's pipeline carries what it loaded to the owner stages.
  if (PositionInStage(comm_->rank(), n, pp_) != 0) return;
  Communicator* ring = comm_->Group(kPipelineRing);
  for (const auto& [name, owner] : owner_) {
    if (owner == 0) continue;
    Variable* var = scope_->Var(name);
    const bool loaded =
        stage_ == 0 && var->IsTensor() && var->GetTensor().initialized();
    if (ring->AllGatherValue(loaded ? 1 : 0)[0] == 0) continue;
    Allocate(GetVarDesc(whole_.blocks(0), name), var->GetMutableTensor());
    ring->Broadcast(var->GetTensor(), 0);
    if (owner > 0 && owner != stage_) Free(scope_, name);
  }
}

}  // namespace fluid
