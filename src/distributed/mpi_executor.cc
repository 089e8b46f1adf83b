#include "src/distributed/mpi_executor.h"

#include <cstdlib>
#include <mutex>
#include <sstream>

#include "src/distributed/in_process_backend.h"
#include "src/distributed/mpi_backend.h"
#ifdef FLUID_WITH_CUDA
#include "src/distributed/nccl_backend.h"
#endif
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/pserver_transpiler.h"

namespace fluid {

namespace {

std::mutex g_comm_mu;
std::unique_ptr<Communicator> g_comm;
bool g_comm_uses_mpi = false;
bool g_atexit_registered = false;

bool IsTranspiled(const proto::ProgramDesc& main) {
  for (const auto& op : main.blocks(0).ops())
    if (op.type() == "c_allreduce") return true;
  return false;
}

uint64_t Fnv(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

Communicator* GlobalCommunicator(const Place& place) {
  std::lock_guard<std::mutex> lock(g_comm_mu);
  if (!g_comm) {
    if (LaunchedByMpi()) {
      std::unique_ptr<CommBackend> backend = MakeMpiBackend();
      g_comm_uses_mpi = true;
#ifdef FLUID_WITH_CUDA
      if (!place.is_cpu()) {
        std::string why;
        backend = MakeDeviceBackend(std::move(backend), place.device, &why);
      }
#endif
      g_comm = std::make_unique<Communicator>(std::move(backend));
    } else {
      g_comm = std::make_unique<Communicator>(
          InProcessGroup::Create(1)->Backend(0));
    }
    if (!g_atexit_registered) {
      g_atexit_registered = true;
      std::atexit([] { ShutdownGlobalCommunicator(); });
    }
  }
  return g_comm.get();
}

void ShutdownGlobalCommunicator() {
  std::unique_ptr<Communicator> comm;
  {
    std::lock_guard<std::mutex> lock(g_comm_mu);
    comm = std::move(g_comm);
  }
  if (comm) {
    comm.reset();  // drains the queue and joins the worker
    if (g_comm_uses_mpi) FinalizeMpiIfOwned();
  }
}

proto::TrainingJob PrepareDistributedJob(const proto::TrainingJob& job,
                                         CollectiveConfig config) {
  CheckJob(job, "job");
  if (IsTranspiled(job.main())) {
    FLUID_ENFORCE(job.main().nranks() == config.nranks, "the job was "
                  "transpiled for ", job.main().nranks(), " ranks but runs on ",
                  config.nranks);
    LintCollective(job.main(), config.nranks, job.distributed().average());
    proto::TrainingJob out = job;
    // A transpiled main program with a startup program that was not: add
    // the broadcasts, or ranks with different seeds would diverge.
    bool broadcasts = false;
    for (const auto& op : job.startup().blocks(0).ops())
      broadcasts = broadcasts || op.type() == "c_broadcast";
    if (!broadcasts) {
      proto::BlockDesc* st = out.mutable_startup()->mutable_blocks(0);
      for (const auto& v : job.startup().blocks(0).vars()) {
        if (!v.persistable()) continue;
        proto::OpDesc op = MakeOp("c_broadcast", {{"X", {v.name()}}},
                                  {{"Out", {v.name()}}}, {{"root", int32_t{0}}});
        SetOpAttr(&op, kOpRoleAttr, static_cast<int32_t>(OpRole::kCollective));
        *st->add_ops() = op;
      }
    }
    return out;
  }
  if (IsPserverTrainer(job.main()))
    FLUID_THROW(ErrorCode::kInvalidArgument,
                "the job is a parameter-server trainer program; convert it "
                "with its pserver programs (PserverToCollective) first");
  return CollectiveTranspile(job, config);
}

MPIExecutor::MPIExecutor(Place place, int num_threads, Communicator* comm)
    : comm_(comm != nullptr ? comm : GlobalCommunicator(place)),
      exe_(place, num_threads) {
  exe_.mutable_device_context()->set_communicator(comm_);
}

void MPIExecutor::Init(const proto::TrainingJob& job, Scope* scope,
                       CollectiveConfig config) {
  FLUID_ENFORCE(scope != nullptr, "MPIExecutor::Init: null scope");
  config.nranks = comm_->size();
  job_ = PrepareDistributedJob(job, config);
  scope_ = scope;

  // Same program everywhere, checked before any other collective.
  // Hashed here, not read from the stamps: a program edited after it was
  // stamped (or never stamped) must still be compared as it is.
  uint64_t mine = StructureHash(job_.main()) ^
                  (StructureHash(job_.startup()) * 31);
  std::vector<uint64_t> all = comm_->AllGatherValue(mine);
  std::ostringstream differ;
  int n_differ = 0;
  for (int r = 1; r < comm_->size(); ++r)
    if (all[r] != all[0]) differ << (n_differ++ ? ", " : "") << r;
  FLUID_ENFORCE_CODE(n_differ == 0, ErrorCode::kAborted,
                     "ranks hold different programs: rank(s) ", differ.str(),
                     " differ from rank 0");

  persistables_.clear();
  for (const auto& v : job_.main().blocks(0).vars())
    if (v.persistable()) persistables_.push_back(v.name());
  exe_.RunOnce(job_.startup(), scope_);
  main_ = exe_.Prepare(job_.main(), scope_);
}

void MPIExecutor::Run(const FeedList& feeds,
                      const std::vector<std::string>& fetch_names,
                      std::vector<Tensor>* fetches) {
  FLUID_ENFORCE(main_ != nullptr, "MPIExecutor::Run before Init");
  exe_.Run(main_.get(), feeds, fetch_names, fetches);
}

void MPIExecutor::BroadcastPersistables() {
  FLUID_ENFORCE(scope_ != nullptr, "MPIExecutor: BroadcastPersistables before Init");
  for (const auto& name : persistables_) {
    Variable* v = scope_->FindVar(name);
    if (v == nullptr || !v->HasValue() || !v->IsTensor()) continue;
    comm_->Broadcast(v->GetTensor(), 0);
  }
}

void MPIExecutor::CheckConsistency() {
  FLUID_ENFORCE(scope_ != nullptr, "MPIExecutor: CheckConsistency before Init");
  for (const auto& name : persistables_) {
    Variable* v = scope_->FindVar(name);
    if (v == nullptr || !v->HasValue() || !v->IsTensor()) continue;
    if (!v->GetTensor().initialized()) continue;
    Tensor t;
    t.CopyFrom(v->GetTensor(), Place::CPU());  // device values come to host
    uint64_t sum = Fnv(t.raw_data(), t.bytes());
    std::vector<uint64_t> all = comm_->AllGatherValue(sum);
    std::ostringstream differ;
    int n = 0;
    for (int r = 1; r < comm_->size(); ++r)
      if (all[r] != all[0]) differ << (n++ ? ", " : "") << r;
    FLUID_ENFORCE_CODE(n == 0, ErrorCode::kAborted, "parameters diverged: '",
                       name, "' on rank(s) ", differ.str(),
                       " differs from rank 0");
  }
}

}  // namespace fluid
