#include "src/distributed/launcher.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "src/distributed/job_control.h"
#include "src/framework/enforce.h"

namespace fluid {

namespace {

using Env = std::function<const char*(const char*)>;

// `name`'s value when set to a non-negative integer, else -1.
int EnvInt(const Env& env, const char* name) {
  const char* v = env(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (*end == '\0' && n >= 0 && n < (1L << 24)) return static_cast<int>(n);
  return -1;
}

// `name`'s value; "" when unset.
std::string EnvText(const Env& env, const char* name) {
  const char* v = env(name);
  return v == nullptr ? std::string() : std::string(v);
}

// Slurm's count per node ("2(x3),1": 2, 2, 2, 1) for node `node`; -1 when
// the list is malformed or shorter.
int SlurmPerNode(const std::string& list, int node) {
  if (node < 0) return -1;
  std::size_t i = 0;
  int seen = 0;
  while (i < list.size()) {
    char* end = nullptr;
    const long count = std::strtol(list.c_str() + i, &end, 10);
    std::size_t j = end - list.c_str();
    if (j == i || count < 0) return -1;
    long repeat = 1;
    if (list.compare(j, 2, "(x") == 0) {
      repeat = std::strtol(list.c_str() + j + 2, &end, 10);
      j = end - list.c_str();
      if (repeat < 1 || j >= list.size() || list[j] != ')') return -1;
      ++j;
    }
    if (node < seen + repeat) return static_cast<int>(count);
    seen += static_cast<int>(repeat);
    if (j < list.size() && list[j] != ',') return -1;
    i = j + 1;
  }
  return -1;
}

// "NAME=value" (or "NAME=(unset)") for messages.
std::string Quoted(const Env& env, const char* name) {
  const char* v = env(name);
  return std::string(name) + "=" + (v == nullptr ? "(unset)" : v);
}

// mpirun started by one task of an srun step of several: every task of
// the step starts its own copy of the whole job (N x N processes).
bool MpirunPerSrunTask(const Env& env, const std::string& parent) {
  const bool mpirun = parent == "mpirun" || parent == "orterun" ||
                      parent == "mpiexec" || parent == "prterun" ||
                      parent.rfind("mpirun.", 0) == 0;
  return mpirun && EnvInt(env, "SLURM_STEP_ID") >= 0 &&
         EnvInt(env, "SLURM_STEP_NUM_TASKS") > 1;
}

void ReadOpenMpi(const Env& env, const std::string& parent, LaunchInfo* l) {
  l->kind = LaunchInfo::Kind::kOpenMpi;
  l->size = std::max(EnvInt(env, "OMPI_COMM_WORLD_SIZE"), 1);
  l->rank = std::max(EnvInt(env, "OMPI_COMM_WORLD_RANK"), 0);
  l->local_rank = std::max(EnvInt(env, "OMPI_COMM_WORLD_LOCAL_RANK"), 0);
  l->local_size = EnvInt(env, "OMPI_COMM_WORLD_LOCAL_SIZE");
  l->hostfile = EnvText(env, "OMPI_MCA_orte_default_hostfile");
  if (MpirunPerSrunTask(env, parent)) {
    l->problem = "mpirun was started by each of the " +
                 EnvText(env, "SLURM_STEP_NUM_TASKS") + " tasks of srun step " +
                 EnvText(env, "SLURM_JOB_ID") + "." +
                 EnvText(env, "SLURM_STEP_ID") + ", so " +
                 EnvText(env, "SLURM_STEP_NUM_TASKS") + " copies of a " +
                 std::to_string(l->size) +
                 "-rank job would train side by side: run mpirun once in "
                 "the batch script (not under srun), or srun --mpi=pmix the "
                 "trainer itself without mpirun";
  }
}

void ReadSrun(const Env& env, LaunchInfo* l) {
  const bool pmix = env("PMIX_RANK") != nullptr;
  const bool pmi2 = env("PMI_FD") != nullptr || env("PMI_RANK") != nullptr;
  l->kind = pmix   ? LaunchInfo::Kind::kSrunPmix
            : pmi2 ? LaunchInfo::Kind::kSrunPmi2
                   : LaunchInfo::Kind::kSrunNoPmi;
  l->size = std::max(EnvInt(env, "SLURM_STEP_NUM_TASKS"), 1);
  l->rank = std::max(EnvInt(env, "SLURM_PROCID"), 0);
  l->local_rank = std::max(EnvInt(env, "SLURM_LOCALID"), 0);
  l->node = EnvInt(env, "SLURM_NODEID");
  l->num_nodes = EnvInt(env, "SLURM_STEP_NUM_NODES");
  l->local_size =
      SlurmPerNode(EnvText(env, "SLURM_STEP_TASKS_PER_NODE"), l->node);
  if (pmix && EnvInt(env, "PMIX_RANK") != l->rank) {
    l->problem = "PMIx numbers this process rank " + EnvText(env, "PMIX_RANK") +
                 " but Slurm task " + EnvText(env, "SLURM_PROCID") + " (" +
                 Quoted(env, "PMIX_RANK") + ", " + Quoted(env, "SLURM_PROCID") +
                 "): is the trainer started by a wrapper that launches "
                 "processes of its own?";
  } else if (!pmix && pmi2) {
    l->problem =
        "srun --mpi=pmi2 started " + std::to_string(l->size) +
        " task(s), but this Open MPI has no PMI-2 client (Debian builds it "
        "with PMIx only): launch with srun --mpi=pmix, or run mpirun inside "
        "the allocation";
  } else if (!pmix && l->size > 1) {
    l->problem =
        "srun started " + std::to_string(l->size) +
        " tasks with no PMI (SLURM_STEP_NUM_TASKS=" + std::to_string(l->size) +
        ", PMIX_RANK unset): each would train alone as a 1-rank job; "
        "launch with srun --mpi=pmix (or MpiDefault=pmix in slurm.conf), or "
        "run mpirun inside the allocation";
  }
}

std::mutex g_mu;
pid_t g_launcher = 0;  // 0: not watching

}  // namespace

LaunchInfo LaunchInfoFrom(const Env& env, const std::string& parent_command) {
  LaunchInfo l;
  l.slurm_job = EnvText(env, "SLURM_JOB_ID");
  l.slurm_cpus_on_node = EnvInt(env, "SLURM_CPUS_ON_NODE");
  if (env("OMPI_COMM_WORLD_SIZE") != nullptr) {
    ReadOpenMpi(env, parent_command, &l);
  } else if (env("SLURM_STEP_ID") != nullptr &&
             env("SLURM_PROCID") != nullptr) {
    ReadSrun(env, &l);
  } else if (env("PMI_SIZE") != nullptr || env("PMIX_RANK") != nullptr) {
    l.kind = LaunchInfo::Kind::kPmi;
    l.size = std::max(EnvInt(env, "PMI_SIZE"), 1);
    l.rank = std::max(
        EnvInt(env, env("PMI_RANK") != nullptr ? "PMI_RANK" : "PMIX_RANK"), 0);
    l.local_rank = std::max(EnvInt(env, "MPI_LOCALRANKID"), 0);
    l.local_size = EnvInt(env, "MPI_LOCALNRANKS");
  }
  if (l.kind == LaunchInfo::Kind::kNone) l.local_size = 1;
  return l;
}

LaunchInfo DetectLaunch() {
  std::string parent;
  std::ifstream comm("/proc/" + std::to_string(getppid()) + "/comm");
  std::getline(comm, parent);
  return LaunchInfoFrom([](const char* name) { return std::getenv(name); },
                        parent);
}

std::string LaunchInfo::LauncherName() const {
  switch (kind) {
    case Kind::kOpenMpi:
      return "mpirun (Open MPI)";
    case Kind::kSrunPmix:
      return "srun --mpi=pmix";
    case Kind::kSrunPmi2:
      return "srun --mpi=pmi2";
    case Kind::kSrunNoPmi:
      return "srun without a PMI";
    case Kind::kPmi:
      return "a PMI process manager";
    case Kind::kNone:
      break;
  }
  return "";
}

std::string LaunchInfo::Describe() const {
  if (kind == Kind::kNone) return "";
  std::string out = "launched by " + LauncherName();
  if (!slurm_job.empty()) out += " in Slurm job " + slurm_job;
  if (!hostfile.empty()) out += " with hostfile " + hostfile;
  if (local_size > 0) {
    out += ", " + std::to_string(local_size) +
           (local_size == 1 ? " rank" : " ranks") + " per node";
  }
  if (slurm_cpus_on_node > 0) {
    out += " (" + std::to_string(slurm_cpus_on_node) + " CPUs allotted)";
  }
  return out;
}

void CheckLaunch(const LaunchInfo& info, int devices) {
  FLUID_ENFORCE(info.problem.empty(), info.problem);
  if (info.local_size > 0 && info.slurm_cpus_on_node > 0) {
    FLUID_ENFORCE(
        info.local_size <= info.slurm_cpus_on_node, info.LauncherName(),
        " put ", info.local_size, " ranks on this node but Slurm job ",
        info.slurm_job, " was allotted ", info.slurm_cpus_on_node,
        " CPU(s) there (SLURM_CPUS_ON_NODE): ask for ", info.local_size,
        " tasks per node (--ntasks-per-node) or start at most ",
        info.slurm_cpus_on_node, " ranks per node");
  }
  if (devices > 0 && info.local_size > devices) {
    FLUID_THROW(ErrorCode::kInvalidArgument, info.LauncherName(), " put ",
                info.local_size, " ranks on this node but they have ", devices,
                " GPU(s) to spread over, so ranks ", devices,
                " and 0 would "
                "bind the same GPU: start at most ",
                devices,
                " ranks per node (--ntasks-per-node, --gpus-per-task=1) or "
                "make more GPUs visible (CUDA_VISIBLE_DEVICES)");
  }
}

std::string LaunchRefusal(const LaunchInfo& info, int devices) {
  try {
    CheckLaunch(info, devices);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void RefuseBadLaunch(const LaunchInfo& info, int devices,
                     const std::string& program) {
  const std::string why = LaunchRefusal(info, devices);
  if (why.empty()) return;
  const std::string who =
      info.size > 1 ? program + ": rank " + std::to_string(info.rank) : program;
  std::fflush(nullptr);
  WriteErrorLine(who + ": error: " + why);
  std::exit(1);
}

int LauncherWorldSize() {
  const LaunchInfo l = DetectLaunch();
  return l.kind == LaunchInfo::Kind::kSrunNoPmi ? 1 : l.size;
}

int LauncherRank() {
  const LaunchInfo l = DetectLaunch();
  return l.kind == LaunchInfo::Kind::kSrunNoPmi ? 0 : l.rank;
}

void WatchLauncher() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_launcher != 0) return;
  const pid_t parent = getppid();
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
  // The parent may have died before the request took effect: then no
  // signal will come, but the process has been re-parented already. (A
  // parent of pid 1 is not taken as a sign: mpirun may be a container's
  // init.)
  if (getppid() != parent) raise(SIGKILL);
  g_launcher = parent;
}

bool LauncherAlive() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_launcher == 0 || getppid() == g_launcher;
}

}  // namespace fluid
