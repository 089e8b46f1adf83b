#include "src/runtime/mpi_executor.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "src/distributed/run_settings.h"
#include "src/framework/hash.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/distributed_job.h"
#include "transpiler/local_rewrites.h"
#include "transpiler/pipeline.h"
#include "transpiler/sharding.h"
#include "transpiler/strategy.h"
#include "transpiler/tensor_parallel.h"

namespace fluid {

namespace {

// A float is NaN or infinite exactly when its exponent bits are all set:
// the largest exponent field seen says it, in a loop of integer ops that
// vectorises (a scan of a 2 MB bucket stays well under a millisecond).
template <typename Float, typename Bits, Bits kExponent>
bool FiniteValues(const Tensor& t) {
  static_assert(sizeof(Float) == sizeof(Bits), "bits of a float");
  const Float* p = t.data<Float>();
  const int64_t n = t.numel();
  Bits most = 0;
  for (int64_t i = 0; i < n; ++i) {
    Bits bits;
    std::memcpy(&bits, p + i, sizeof(bits));
    const Bits e = bits & kExponent;
    most = e > most ? e : most;
  }
  return most != kExponent;
}

// Integer tensors are always finite. A device tensor is scanned in
// `staging`, a host buffer reused from step to step.
bool AllFinite(const Tensor& value, Tensor* staging) {
  if (!value.initialized() || value.numel() == 0) return true;
  const Tensor* t = &value;
  if (!value.place().is_cpu()) {
    staging->CopyFrom(value, Place::CPU());
    t = staging;
  }
  switch (t->dtype()) {
    case DataType::kFloat32:
      return FiniteValues<float, uint32_t, 0x7f800000u>(*t);
    case DataType::kFloat64:
      return FiniteValues<double, uint64_t, 0x7ff0000000000000ull>(*t);
    default:
      return true;
  }
}

// The ranks whose value in `all` (one per rank) differs from rank 0's, as
// "1, 3"; empty when none does.
std::string RanksDifferingFromRank0(const std::vector<uint64_t>& all) {
  std::ostringstream differ;
  int n = 0;
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0]) differ << (n++ ? ", " : "") << r;
  return differ.str();
}

// The tensors of the persistable vars of `program` that `scope` holds
// (sharing their memory).
std::vector<std::pair<std::string, Tensor>> HeldPersistables(
    const proto::ProgramDesc& program, const Scope& scope) {
  std::vector<std::pair<std::string, Tensor>> held;
  for (const auto& v : program.blocks(0).vars()) {
    const Variable* var = scope.FindVar(v.name());
    if (v.persistable() && var != nullptr && var->HasValue() &&
        var->IsTensor() && var->GetTensor().initialized())
      held.emplace_back(v.name(), var->GetTensor());
  }
  return held;
}

// The ops of `startup` that initialise persistables `scope` lacks: the
// state a pass of the preparation added (mixed precision's loss scaling)
// when the caller ran the untranspiled startup program itself. Every rank
// runs the same initialisers, so no broadcast is needed.
proto::ProgramDesc MissingStateInitialisers(const proto::ProgramDesc& startup,
                                            const Scope& scope) {
  proto::ProgramDesc out = startup;
  proto::BlockDesc* block = out.mutable_blocks(0);
  block->clear_ops();
  for (const auto& op : startup.blocks(0).ops()) {
    // Collectives, and the shards' state (ShardState::Begin makes it).
    if (op.type().rfind("c_", 0) == 0 || MakesShardState(op)) continue;
    bool all_missing = !OpOutputNames(op).empty();
    for (const auto& n : OpOutputNames(op)) {
      const Variable* v = scope.FindVar(n);
      all_missing =
          all_missing && (v == nullptr || !v->HasValue() || !v->IsTensor() ||
                          !v->GetTensor().initialized());
    }
    if (all_missing) *block->add_ops() = op;
  }
  return out;
}

// `startup` less the state shaped and named after a trainable parameter
// (an optimizer's accumulators) that fill_constant makes: those ops, the
// vars and any op reading them (a broadcast of them).
proto::ProgramDesc WithoutParameterState(const proto::ProgramDesc& startup) {
  const proto::BlockDesc& block = startup.blocks(0);
  std::set<std::string> deferred;
  for (const auto& op : block.ops()) {
    const std::vector<std::string> outs = OpOutputNames(op);
    if (op.type() != "fill_constant" || outs.size() != 1) continue;
    const proto::VarDesc* state = FindVarDesc(block, outs[0]);
    if (state == nullptr || !state->persistable() || state->trainable())
      continue;
    for (const auto& p : block.vars())
      if (p.trainable() && outs[0].rfind(p.name() + "_", 0) == 0 &&
          VarShape(p) == VarShape(*state))
        deferred.insert(outs[0]);
  }
  auto touches = [&](const proto::OpDesc& op) {
    for (const auto& names : {OpInputNames(op), OpOutputNames(op)})
      for (const auto& n : names)
        if (deferred.count(n)) return true;
    return false;
  };
  proto::ProgramDesc out = startup;
  proto::BlockDesc* b = out.mutable_blocks(0);
  auto* ops = b->mutable_ops();
  ops->erase(std::remove_if(ops->begin(), ops->end(), touches), ops->end());
  auto* vars = b->mutable_vars();
  vars->erase(std::remove_if(vars->begin(), vars->end(),
                             [&](const proto::VarDesc& v) {
                               return deferred.count(v.name()) > 0;
                             }),
              vars->end());
  return out;
}

// What the ranks of a data-parallel group would run unsharded: the job
// after the rewrites of what one rank computes (mixed precision's loss
// scaling and gradient merge's accumulators are persistable state a
// checkpoint must hold), split by tensor parallelism when it is asked for
// with sharding (a pipeline's stage job splits it: StagePlainJob).
proto::TrainingJob PlainJob(const proto::TrainingJob& job,
                            const proto::DistributedStrategy& strategy) {
  if (FormOf(job.main()) != JobForm::kLocal) return job;
  const proto::DistributedStrategy s = CanonicalStrategy(strategy);
  proto::TrainingJob plain = LocalRewrites(job, s);
  if (PipelineStages(s) > 1) {
    *plain.mutable_strategy() = s;
    return plain;
  }
  const int tp = TensorParallelDegree(s);
  if (tp == 1 || ShardStage(s) == 0) return plain;
  *plain.mutable_strategy() = s;
  return TensorParallelRewrite(plain, tp);
}

// What this rank's stage runs unsharded (`plain` itself without pipeline
// stages): its part of the pipeline cut of `plain` (split first by tensor
// parallelism), before the data-parallel passes.
proto::TrainingJob StagePlainJob(const proto::TrainingJob& plain, int rank,
                                 int nranks) {
  const proto::DistributedStrategy& s = plain.strategy();
  const int pp = PipelineStages(s);
  if (pp == 1) return plain;
  const int tp = TensorParallelDegree(s);
  return PipelineStageJob(
      PipelineRewrite(tp > 1 ? TensorParallelRewrite(plain, tp) : plain),
      StageOf(rank, nranks, pp));
}

}  // namespace

MPIExecutor::MPIExecutor(Place place, int num_threads, Communicator* comm)
    : comm_(comm != nullptr ? comm : GlobalCommunicator(place)),
      exe_(place, num_threads),
      shard_(&exe_, comm_),
      tp_(&exe_, comm_),
      pp_(comm_) {
  exe_.mutable_device_context()->set_communicator(comm_);
}

void MPIExecutor::CheckSameProgram(uint64_t mine, const char* what) {
  const std::string differ =
      RanksDifferingFromRank0(comm_->AllGatherValue(mine));
  FLUID_ENFORCE_CODE(differ.empty(), ErrorCode::kAborted,
                     "ranks hold different ", what, ": rank(s) ", differ,
                     " differ from rank 0");
}

// (shard_'s end waits for the gathers in flight.)
MPIExecutor::~MPIExecutor() = default;

void MPIExecutor::RunStartup(const proto::ProgramDesc& startup, Scope* scope,
                             bool defer_parameter_state) {
  FLUID_ENFORCE(scope != nullptr, "MPIExecutor::RunStartup: null scope");
  proto::ProgramDesc program = StartupWithBroadcasts(
      defer_parameter_state ? WithoutParameterState(startup) : startup);
  CheckSameProgram(StructureHash(program), "startup programs");
  exe_.RunOnce(program, scope);
}

void MPIExecutor::Init(const proto::TrainingJob& job, Scope* scope,
                       const proto::DistributedStrategy& strategy,
                       bool run_startup) {
  FLUID_ENFORCE(scope != nullptr, "MPIExecutor::Init: null scope");
  WaitParameterGathers();  // of the job this executor ran before, if any
  CheckStrategyAgrees(strategy);
  job_ = PrepareJob(job, strategy, comm_->size(), {}, comm_->rank());
  scope_ = scope;

  // Same program everywhere, checked before any other collective.
  // Hashed here, not read from the stamps: a program edited after it was
  // stamped (or never stamped) must still be compared as it is. The stages
  // of a pipeline run different programs, cut from the same one.
  const bool staged = PipelineStages(job_.strategy()) > 1;
  const proto::TrainingJob& same = staged ? job : job_;
  CheckSameProgram(
      StructureHash(same.main()) ^ (StructureHash(same.startup()) * 31),
      "programs");
  topology_ = GatherTopology(comm_);

  persistables_.clear();
  for (const auto& v : job_.main().blocks(0).vars())
    if (v.persistable() && v.type() != proto::VarDesc::COMM_HANDLE)
      persistables_.push_back(v.name());
  // The averaged buffers, each with the gradients laid out in it, for
  // NonFiniteGradient.
  std::map<std::string, std::vector<std::string>> members;
  for (const auto& op : job_.main().blocks(0).ops()) {
    if (op.type() != "coalesce_tensor") continue;
    auto fused = OpOutput(op, "FusedOutput");
    if (!fused.empty()) members[fused[0]] = OpOutput(op, "Output");
  }
  averaged_.clear();
  for (const auto& op : job_.main().blocks(0).ops()) {
    // (Tensor parallelism's sums of activations are no gradients.)
    if (op.type() != "c_allreduce" || HasOpAttr(op, kTpRoleAttr)) continue;
    for (const auto& n : OpInput(op, "X")) averaged_.push_back({n, members[n]});
  }
  // Started from what the scope holds: keep it (a checkpoint loaded before
  // the first run included), whatever sharding frees.
  // What the ranks would run unsharded: the job after the rewrites of
  // what one rank computes (mixed precision's loss scaling and gradient
  // merge's accumulators are persistable state a checkpoint must hold).
  // With tensor parallelism, what each rank of a data-parallel group runs
  // unsharded is the split job.
  const proto::TrainingJob plain = PlainJob(job, strategy);
  // A pipeline stage's: what its data-parallel ring runs unsharded.
  const proto::TrainingJob stage =
      StagePlainJob(plain, comm_->rank(), comm_->size());
  std::vector<std::pair<std::string, Tensor>> held;
  // The rings, before the startup's c_split ops.
  tp_.Begin(job_, stage, scope_);
  pp_.Begin(plain, scope_);
  const bool split = tp_.active() || pp_.active();
  shard_.SetGroup(split ? comm_->Group(kDataParallelRing) : comm_, split);
  if (run_startup) {
    exe_.RunOnce(job_.startup(), scope_);
  } else {
    held = HeldPersistables(plain.main(), *scope_);
    const proto::ProgramDesc missing =
        MissingStateInitialisers(job_.startup(), *scope_);
    if (missing.blocks(0).ops_size() > 0) exe_.RunOnce(missing, scope_);
    tp_.SliceWhole();  // values a plain startup or a checkpoint left whole
  }
  shard_.Begin(stage, job_, scope_, /*create=*/!run_startup);
  main_ = exe_.Prepare(job_.main(), scope_);
  main_->set_fence_owner(&shard_);  // its ops wait for its gathers themselves
  // NonFiniteGradient scans the averaged gradients after a run: eager
  // deletion must leave them.
  std::vector<std::string> scanned;
  for (const auto& [buffer, members] : averaged_) {
    scanned.push_back(buffer);
    scanned.insert(scanned.end(), members.begin(), members.end());
  }
  main_->KeepAfterRun(scanned);
  shard_.Plan(stage, job_);
  tp_.Plan(shard_.checkpoint_program(job_.main()));
  // Then every rank takes rank 0's values, and its shard of the state.
  // (A pipeline's broadcasts are every stage's, sharded or not.)
  if (pp_.AnyRank(shard_.Restore(&held))) BroadcastPersistables();
  pp_.DropOtherStages();
  proto::ProgramDesc stat_sync = StatSyncProgram(job_.main());
  // Under tensor or pipeline parallelism each data-parallel group averages
  // its own (a stage's batch norms and accumulators are its own).
  if (TensorParallelDegree(job_.strategy()) > 1 ||
      PipelineStages(job_.strategy()) > 1)
    UseDataParallelRing(&stat_sync);
  stat_sync_ = stat_sync.blocks(0).ops_size() > 0
                   ? exe_.Prepare(stat_sync, scope_)
                   : nullptr;
  // A job transpiled already brings its strategy; what this run sets wins.
  proto::DistributedStrategy run = job_.strategy();
  run.MergeFrom(strategy);
  comm_->SetAllReduceAlgorithm(
      ChooseAllReduce(run.allreduce_hierarchy(), topology_));
}

void MPIExecutor::SyncRunningStats() {
  FLUID_ENFORCE(main_ != nullptr, "MPIExecutor: SyncRunningStats before Init");
  if (stat_sync_ != nullptr) exe_.Run(stat_sync_.get());
}

void MPIExecutor::CheckStrategyAgrees(
    const proto::DistributedStrategy& strategy) {
  std::vector<RunSetting> fields;
  for (const auto& [path, value] : StrategyFields(strategy))
    fields.push_back(RunSetting::Text("DistributedStrategy." + path, value));
  CheckRunSettingsAgree(comm_, fields);
}

std::string MPIExecutor::NonFiniteGradient() const {
  FLUID_ENFORCE(main_ != nullptr, "MPIExecutor: NonFiniteGradient before Init");
  // Bucket buffers first (one scan each); the gradient inside a bad bucket
  // is named by scanning its members. Gradients and buckets are
  // temporaries of the prepared program's scope.
  const Scope* scope = main_->local_scope();
  auto finite = [this, scope](const std::string& name) {
    const Variable* v = scope->FindVar(name);
    if (v == nullptr || !v->HasValue() || !v->IsTensor()) return true;
    return AllFinite(v->GetTensor(), &finite_staging_);
  };
  for (const auto& [buffer, members] : averaged_) {
    if (finite(buffer)) continue;
    for (const auto& m : members)
      if (!finite(m)) return m;
    return buffer;
  }
  return "";
}

std::string MPIExecutor::NonFiniteFeeds() {
  FLUID_ENFORCE(main_ != nullptr, "MPIExecutor: NonFiniteFeeds before Init");
  // This rank's first feed holding a NaN or an infinity (index + 1; 0: none).
  const std::vector<std::string>& feeds = main_->feed_targets();
  const Scope* scope = main_->local_scope();
  uint64_t mine = 0;
  for (size_t i = 0; i < feeds.size() && mine == 0; ++i) {
    const Variable* v = scope->FindVar(feeds[i]);
    if (v == nullptr || !v->HasValue() || !v->IsTensor()) continue;
    if (!AllFinite(v->GetTensor(), &finite_staging_)) mine = i + 1;
  }
  const std::vector<uint64_t> all = comm_->AllGatherValue(mine);
  std::string out;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r] == 0 || all[r] > feeds.size()) continue;
    out += (out.empty() ? "" : ", ") + std::string("rank ") +
           std::to_string(r) + " (feed " + Quote(feeds[all[r] - 1]) + ")";
  }
  return out;
}

void MPIExecutor::Run(const FeedList& feeds,
                      const std::vector<std::string>& fetch_names,
                      std::vector<Tensor>* fetches) {
  FLUID_ENFORCE(main_ != nullptr, "MPIExecutor::Run before Init");
  comm_->BeginStep();  // numbers the step's collectives for the recorder
  if (!shard_.overlaps_gathers()) {
    exe_.Run(main_.get(), feeds, fetch_names, fetches);
    return;
  }
  // The step leaves parameter gathers in flight: every reader of the scope
  // but the next step waits for them (Scope::Settle).
  if (fetches == nullptr) {
    exe_.Run(main_.get(), feeds, fetch_names, fetches);
    shard_.FenceStep();
    return;
  }
  // Gathers are in flight when the run ends: persistable vars (parameters)
  // are fetched once they are waited for, the others by the run.
  const proto::BlockDesc& block = job_.main().blocks(0);
  std::vector<std::string> temps;
  std::vector<size_t> at;  // index of each of temps in fetch_names
  for (size_t i = 0; i < fetch_names.size(); ++i) {
    const proto::VarDesc* desc = FindVarDesc(block, fetch_names[i]);
    if (desc != nullptr && desc->persistable()) continue;
    temps.push_back(fetch_names[i]);
    at.push_back(i);
  }
  std::vector<Tensor> got;
  exe_.Run(main_.get(), feeds, temps, &got);
  shard_.FenceStep();
  fetches->resize(fetch_names.size());
  for (size_t j = 0; j < at.size(); ++j) (*fetches)[at[j]] = std::move(got[j]);
  if (temps.size() == fetch_names.size()) return;
  scope_->Settle();
  for (size_t i = 0, j = 0; i < fetch_names.size(); ++i) {
    if (j < at.size() && at[j] == i) {
      ++j;
      continue;
    }
    const Tensor& t = scope_->GetVar(fetch_names[i])->GetTensor();
    FLUID_ENFORCE(t.initialized(), "fetch ", Quote(fetch_names[i]),
                  " holds no value after the run");
    (*fetches)[i].CopyFrom(t, Place::CPU());
  }
}

void MPIExecutor::BroadcastPersistables() {
  FLUID_ENFORCE(scope_ != nullptr,
                "MPIExecutor: BroadcastPersistables before Init");
  scope_->Settle();
  const std::set<std::string> state(shard_.per_parameter_state().begin(),
                                    shard_.per_parameter_state().end());
  if (pp_.active()) {
    pp_.BroadcastLoaded();  // each stage's vars to it, then within it
    pp_.BroadcastWithinStage(job_.main());
    // The sharded state, whole on the stage's first rank, reaches the
    // first rank of each data-parallel ring (its tensor-parallel group),
    // to be cut to that ring's slice and scattered.
    if (tp_.active())
      pp_.BroadcastWithinStage(checkpoint_program(), kTensorParallelRing,
                               &state);
    tp_.SliceWhole();
    shard_.ScatterLoaded();  // from each data-parallel ring's first rank
    return;
  }
  for (const auto& v : checkpoint_program().blocks(0).vars()) {
    if (!v.persistable() || IsShardVar(v.name())) continue;
    // A sharded job's per-parameter state is ScatterLoaded's, unless the
    // shards are of tensor-parallel slices: each data-parallel group's
    // first rank then needs its slice of what rank 0 loaded first.
    if (state.count(v.name())) {
      if (tp_.active()) BroadcastLoadedState(v);
      continue;
    }
    Variable* var = scope_->FindVar(v.name());
    if (var == nullptr || !var->HasValue() || !var->IsTensor()) continue;
    if (tp_.IsSplit(v.name())) {
      tp_.Broadcast(v.name());
    } else {
      comm_->Broadcast(var->GetTensor(), 0);
    }
  }
  tp_.SliceWhole();
  shard_.ScatterLoaded();
}

void MPIExecutor::BroadcastLoadedState(const proto::VarDesc& v) {
  Variable* var = scope_->Var(v.name());
  const bool mine = var->IsTensor() && var->GetTensor().initialized();
  if (comm_->AllGatherValue(mine ? 1 : 0)[0] == 0) return;  // not loaded
  if (tp_.IsSplit(v.name())) return tp_.Broadcast(v.name());
  Tensor* t = var->GetMutableTensor();
  if (!t->initialized()) {
    t->set_dtype(VarDtype(v));
    t->Resize(VarShape(v));
    t->raw_mutable_data();
  }
  comm_->Broadcast(*t, 0);
}

void MPIExecutor::CheckConsistency() {
  FLUID_ENFORCE(scope_ != nullptr, "MPIExecutor: CheckConsistency before Init");
  scope_->Settle();
  // Running statistics are the ranks' own until SyncRunningStats.
  const std::vector<std::string> stats = RunningStatVars(job_.main());
  const std::set<std::string> per_rank(stats.begin(), stats.end());
  for (const auto& name : persistables_) {
    if (per_rank.count(name) || IsShardVar(name)) continue;
    Variable* v = scope_->FindVar(name);
    if (v == nullptr || !v->HasValue() || !v->IsTensor()) continue;
    if (!v->GetTensor().initialized()) continue;
    Tensor t;
    t.CopyFrom(v->GetTensor(), Place::CPU());  // device values come to host
    // A tensor-parallel slice is compared within its data-parallel group.
    Communicator* group =
        pp_.active() ? pp_.data_parallel_group() : tp_.ReplicaGroup(name);
    const std::string differ = RanksDifferingFromRank0(
        group->AllGatherValue(Fnv1a64(t.raw_data(), t.bytes())));
    FLUID_ENFORCE_CODE(differ.empty(), ErrorCode::kAborted,
                       "parameters diverged: '", name, "' on rank(s) ", differ,
                       group == comm_ ? std::string(" differs from rank 0")
                                      : std::string(" of its data-parallel "
                                                    "group differs from "
                                                    "that group's first"));
  }
}

}  // namespace fluid
