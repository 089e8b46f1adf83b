#include "src/distributed/global_communicator.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/distributed/in_process_backend.h"
#include "src/distributed/launcher.h"
#include "src/distributed/mpi_backend.h"
#include "src/distributed/mpi_membership.h"
#include "src/distributed/stall_watchdog.h"
#ifdef FLUID_WITH_CUDA
#include "src/distributed/nccl_backend.h"
#endif

namespace fluid {

namespace {

std::mutex g_comm_mu;
std::unique_ptr<Communicator> g_comm;
bool g_comm_uses_mpi = false;
bool g_atexit_registered = false;
bool g_left = false;  // this process said farewell (see LeaveJob)

// The launcher's name for this job, the same on every rank of it and
// different for the next: PMIx's namespace (Open MPI 4 and 5), Open MPI's
// job id, Slurm's job and step. Empty when there is none (the
// communicator then names the job after a number rank 0 drew).
std::string LauncherJobId() {
  for (const char* name : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid",
                           "OMPI_MCA_orte_ess_jobid"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return v;
  }
  const char* slurm = std::getenv("SLURM_JOB_ID");
  if (slurm != nullptr && *slurm != '\0') {
    const char* step = std::getenv("SLURM_STEP_ID");
    return std::string("slurm-") + slurm +
           (step != nullptr && *step != '\0' ? std::string(".") + step : "");
  }
  return "";
}

// Every rank of an MPI job records its collectives (dumped on an abort, in
// the job's directory under $TMPDIR until told otherwise, stamped with the
// job's id) and watches for stalls with the default limits until the
// trainer or MPIExecutor configures them; so does every ring of 2 or more
// ranks (tensor parallelism), over a channel to its members only.
void StartStallDetection(Communicator* comm) {
  const std::string job = LauncherJobId();
  comm->flight_recorder()->SetJobId(job);
  comm->flight_recorder()->SetDefaultDumpPath(DefaultFlightDir(job),
                                              comm->rank(), comm->size());
  SetFlightDumpTarget(comm->flight_recorder());
  if (auto channel = MakeMpiProgressChannel()) {
    comm->StartStallWatchdog(
        std::move(channel), StallConfig(), [] { MPI_Abort(MPI_COMM_WORLD, 1); },
        [](int ring, const std::vector<int>& world_ranks) {
          return MakeMpiProgressChannel(ring, world_ranks);
        });
  }
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
      StartStallDetection(g_comm.get());
    } else {
      g_comm =
          std::make_unique<Communicator>(InProcessGroup::Create(1)->Backend(0));
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
    SetFlightDumpTarget(nullptr);
    comm.reset();  // drains the queue, joins the worker, says farewell
    if (g_comm_uses_mpi) FinalizeMpiIfOwned();
    std::lock_guard<std::mutex> lock(g_comm_mu);
    g_left = true;
  }
}

void LeaveJob() {
  {
    std::lock_guard<std::mutex> lock(g_comm_mu);
    if (g_left) return;
    if (!g_comm) {
      g_left = true;
      if (LauncherWorldSize() <= 1) return;
      // Another library (mpi4py) finalised MPI already: nothing to say it
      // with.
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (finalized) return;
      // Never made a communicator: say farewell all the same, or ranks
      // that did would wait for this one forever.
      EnsureMpiInitialized();
      { MpiMembership(MPI_COMM_WORLD).Leave(); }
      FinalizeMpiIfOwned();
      return;
    }
  }
  ShutdownGlobalCommunicator();
}

}  // namespace fluid
