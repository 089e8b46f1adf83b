// The launcher (mpirun, srun, a PMI process manager) as this process sees
// it.
//
// What the launcher told this process through its environment, read
// without initialising MPI: which launcher started it, as which rank of how
// many, which of the ranks on its node, on which node, and what the
// scheduler allotted there. For messages and safety checks made before (or
// without) a communicator; the communicator's own rank and size are
// authoritative.
//
// Each launcher speaks through its own variables, and a variable of one
// can be inherited by the processes of another: a rank started by mpirun
// inside a Slurm allocation inherits the batch step's SLURM_PROCID (0 on
// every rank). So the launcher is recognised first and its variables alone
// are read:
//   mpirun (Open MPI)    OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK /
//                        _LOCAL_SIZE; under Kubeflow's MPIJob also
//                        OMPI_MCA_orte_default_hostfile (/etc/mpi/hostfile)
//   srun --mpi=pmix      PMIX_RANK, with Slurm's step: SLURM_STEP_NUM_TASKS,
//                        SLURM_LOCALID, SLURM_NODEID, SLURM_STEP_NUM_NODES,
//                        SLURM_STEP_TASKS_PER_NODE
//   srun --mpi=pmi2, a   PMI_RANK / PMI_SIZE (MPI_LOCALRANKID /
//   PMI process manager  MPI_LOCALNRANKS where set)
//   srun without a PMI   SLURM_PROCID / SLURM_STEP_NUM_TASKS (refused when
//                        it starts more than one task: each would train
//                        alone)
// and, inside a Slurm allocation, SLURM_JOB_ID and SLURM_CPUS_ON_NODE.
//
// A rank whose launcher is gone must stop at once: nobody will collect its
// output or its exit status, the job as the user sees it is over, and an
// orphaned rank 0 that keeps training keeps committing checkpoints behind
// the user's back. WatchLauncher asks the kernel to SIGKILL this process
// when its parent dies; LauncherAlive lets code about to write something
// that outlives the process (a checkpoint) check that the launcher is still
// there, closing the window between the parent's death and the signal.
// Thread-safe.
#pragma once

#include <functional>
#include <string>

namespace fluid {

// Ranks the launcher started (OMPI_COMM_WORLD_SIZE, PMI_SIZE, Slurm's step
// size under srun); 1 when the process was not started by a launcher.
int LauncherWorldSize();
// This process's rank as the launcher numbered it; 0 when not launched.
int LauncherRank();

// What one process learnt from its launcher's environment.
struct LaunchInfo {
  enum class Kind {
    kNone,       // started by hand (or in a batch script, without srun)
    kOpenMpi,    // mpirun / orterun (also inside an allocation, MPIJob)
    kSrunPmix,   // srun --mpi=pmix
    kSrunPmi2,   // srun --mpi=pmi2: this Open MPI has no PMI-2 client
    kSrunNoPmi,  // srun --mpi=none: tasks that know no peers
    kPmi,        // another process manager speaking PMI (MPICH's hydra)
  };
  Kind kind = Kind::kNone;
  int rank = 0;
  int size = 1;
  int local_rank = 0;  // among the job's ranks on this node
  int local_size = 1;  // the job's ranks on this node; -1 unknown
  int node = -1;       // this node's index among the job's; -1 unknown
  int num_nodes = -1;  // -1 unknown (the topology finds out)
  // Slurm: the job id ("" outside an allocation) and the CPUs it allotted
  // on this node (SLURM_CPUS_ON_NODE; -1 unknown).
  std::string slurm_job;
  int slurm_cpus_on_node = -1;
  // Open MPI's default hostfile, as Kubeflow's MPI Operator sets it.
  std::string hostfile;
  // Set when what the variables say cannot train (srun with no PMI, a
  // PMIx rank that is not Slurm's, mpirun started by every task of an
  // srun step): the reason, naming the variables and their values.
  std::string problem;

  // "mpirun (Open MPI)", "srun --mpi=pmix", ...; "" for kNone.
  std::string LauncherName() const;
  // For the trainer's opening line: "launched by srun --mpi=pmix in Slurm
  // job 12, 2 ranks per node"; "" when not launched.
  std::string Describe() const;
};

// Reads the launcher's variables through `env` (a getenv: nullptr when a
// variable is unset); `parent_command` is the parent process's command
// name (/proc/PPID/comm), used to tell an mpirun started by each task of
// an srun step.
LaunchInfo LaunchInfoFrom(const std::function<const char*(const char*)>& env,
                          const std::string& parent_command);
// This process's: its environment and its parent.
LaunchInfo DetectLaunch();

// Refuses (kInvalidArgument, one message naming both numbers and what to
// do instead) a launch that cannot train as asked: `info.problem`; more
// ranks on this node than CPUs Slurm allotted there; more ranks on this
// node than `devices` (the distinct GPUs its ranks spread over; 0 when
// they run on the CPU), which would bind two ranks to one GPU.
void CheckLaunch(const LaunchInfo& info, int devices);
// CheckLaunch's message for a launch it refuses; "" for one it accepts.
std::string LaunchRefusal(const LaunchInfo& info, int devices);

// CheckLaunch for a program about to start MPI: on a refusal writes one
// line, "PROGRAM: rank R: error: WHY" (no rank for a launch of one), and
// exits with status 1 without initialising MPI, which either cannot start
// (srun --mpi=pmi2 with no PMI-2 client) or would start a job that must
// not train. The launcher sees the exit and ends the job (mpirun; srun
// with --kill-on-bad-exit). The Python package refuses the same launches:
// fluid.MPIExecutor raises ValueError with CheckLaunch's message, and a
// script that ends without one exits this way ("fluid: rank R: error:
// WHY") instead of starting MPI for its farewell.
void RefuseBadLaunch(const LaunchInfo& info, int devices,
                     const std::string& program);

// Records the parent process and arranges for SIGKILL when it dies (Linux
// PR_SET_PDEATHSIG; elsewhere only the record). If the parent is already
// gone (this process was re-parented before the call), kills this process
// at once. Called by EnsureMpiInitialized for processes started by an MPI
// launcher, so both the trainer and Python ranks get it; safe to call more
// than once (the first record stays).
void WatchLauncher();

// False once the parent recorded by WatchLauncher is no longer this
// process's parent; true when nothing is watched.
bool LauncherAlive();

}  // namespace fluid
