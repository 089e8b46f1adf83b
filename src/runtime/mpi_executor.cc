#include "src/runtime/mpi_executor.h"

#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "src/framework/hash.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/distributed_job.h"

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

}  // namespace

MPIExecutor::MPIExecutor(Place place, int num_threads, Communicator* comm)
    : comm_(comm != nullptr ? comm : GlobalCommunicator(place)),
      exe_(place, num_threads) {
  exe_.mutable_device_context()->set_communicator(comm_);
}

void MPIExecutor::CheckSameProgram(uint64_t mine, const char* what) {
  const std::string differ =
      RanksDifferingFromRank0(comm_->AllGatherValue(mine));
  FLUID_ENFORCE_CODE(differ.empty(), ErrorCode::kAborted,
                     "ranks hold different ", what, ": rank(s) ", differ,
                     " differ from rank 0");
}

void MPIExecutor::RunStartup(const proto::ProgramDesc& startup, Scope* scope) {
  FLUID_ENFORCE(scope != nullptr, "MPIExecutor::RunStartup: null scope");
  proto::ProgramDesc program = StartupWithBroadcasts(startup);
  CheckSameProgram(StructureHash(program), "startup programs");
  exe_.RunOnce(program, scope);
}

void MPIExecutor::Init(const proto::TrainingJob& job, Scope* scope,
                       CollectiveConfig config, bool run_startup) {
  FLUID_ENFORCE(scope != nullptr, "MPIExecutor::Init: null scope");
  config.nranks = comm_->size();
  job_ = PrepareJob(job, config);
  scope_ = scope;

  // Same program everywhere, checked before any other collective.
  // Hashed here, not read from the stamps: a program edited after it was
  // stamped (or never stamped) must still be compared as it is.
  CheckSameProgram(
      StructureHash(job_.main()) ^ (StructureHash(job_.startup()) * 31),
      "programs");
  topology_ = GatherTopology(comm_);

  persistables_.clear();
  for (const auto& v : job_.main().blocks(0).vars())
    if (v.persistable()) persistables_.push_back(v.name());
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
    if (op.type() != "c_allreduce") continue;
    for (const auto& n : OpInput(op, "X")) averaged_.push_back({n, members[n]});
  }
  if (run_startup) exe_.RunOnce(job_.startup(), scope_);
  main_ = exe_.Prepare(job_.main(), scope_);
  const proto::ProgramDesc stat_sync = StatSyncProgram(job_.main());
  stat_sync_ = stat_sync.blocks(0).ops_size() > 0
                   ? exe_.Prepare(stat_sync, scope_)
                   : nullptr;
}

void MPIExecutor::SyncRunningStats() {
  FLUID_ENFORCE(main_ != nullptr, "MPIExecutor: SyncRunningStats before Init");
  if (stat_sync_ != nullptr) exe_.Run(stat_sync_.get());
}

void MPIExecutor::SetAllReduceMode(const std::string& mode) {
  FLUID_ENFORCE(main_ != nullptr, "MPIExecutor: SetAllReduceMode before Init");
  comm_->SetAllReduceAlgorithm(ChooseAllReduce(mode, topology_));
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

void MPIExecutor::Run(const FeedList& feeds,
                      const std::vector<std::string>& fetch_names,
                      std::vector<Tensor>* fetches) {
  FLUID_ENFORCE(main_ != nullptr, "MPIExecutor::Run before Init");
  comm_->BeginStep();  // numbers the step's collectives for the recorder
  exe_.Run(main_.get(), feeds, fetch_names, fetches);
}

void MPIExecutor::BroadcastPersistables() {
  FLUID_ENFORCE(scope_ != nullptr,
                "MPIExecutor: BroadcastPersistables before Init");
  for (const auto& name : persistables_) {
    Variable* v = scope_->FindVar(name);
    if (v == nullptr || !v->HasValue() || !v->IsTensor()) continue;
    comm_->Broadcast(v->GetTensor(), 0);
  }
}

void MPIExecutor::CheckConsistency() {
  FLUID_ENFORCE(scope_ != nullptr, "MPIExecutor: CheckConsistency before Init");
  // Running statistics are the ranks' own until SyncRunningStats.
  const std::vector<std::string> stats = RunningStatVars(job_.main());
  const std::set<std::string> per_rank(stats.begin(), stats.end());
  for (const auto& name : persistables_) {
    if (per_rank.count(name)) continue;
    Variable* v = scope_->FindVar(name);
    if (v == nullptr || !v->HasValue() || !v->IsTensor()) continue;
    if (!v->GetTensor().initialized()) continue;
    Tensor t;
    t.CopyFrom(v->GetTensor(), Place::CPU());  // device values come to host
    const std::string differ = RanksDifferingFromRank0(
        comm_->AllGatherValue(Fnv1a64(t.raw_data(), t.bytes())));
    FLUID_ENFORCE_CODE(differ.empty(), ErrorCode::kAborted,
                       "parameters diverged: '", name, "' on rank(s) ", differ,
                       " differs from rank 0");
  }
}

}  // namespace fluid
