// The launcher as a process sees it: rank, size, local rank and node read
// from the variables of whichever launcher started the process (Open MPI,
// srun with PMIx, srun alone, PMI), never from another launcher's variables
// that a process inherited; and the launches that cannot train refused with
// both numbers named.
#include "src/distributed/launcher.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "src/framework/enforce.h"

namespace fluid {
namespace {

using Vars = std::map<std::string, std::string>;

LaunchInfo From(const Vars& vars, const std::string& parent = "bash") {
  return LaunchInfoFrom(
      [&vars](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      parent);
}

// The message CheckLaunch refuses `info` with; "" when it accepts it.
std::string Refusal(const LaunchInfo& info, int devices = 0) {
  try {
    CheckLaunch(info, devices);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(Launcher, NoLauncher) {
  LaunchInfo l = From({});
  EXPECT_EQ(l.kind, LaunchInfo::Kind::kNone);
  EXPECT_EQ(l.rank, 0);
  EXPECT_EQ(l.size, 1);
  EXPECT_EQ(l.local_size, 1);
  EXPECT_EQ(l.Describe(), "");
  EXPECT_EQ(Refusal(l), "");
}

// A batch script's own shell: the allocation's variables, no step. One
// process started there is not a launch of several.
TEST(Launcher, BatchScriptAlone) {
  LaunchInfo l = From({{"SLURM_JOB_ID", "7"},
                       {"SLURM_NTASKS", "4"},
                       {"SLURM_PROCID", "0"},
                       {"SLURM_CPUS_ON_NODE", "2"}});
  EXPECT_EQ(l.kind, LaunchInfo::Kind::kNone);
  EXPECT_EQ(l.size, 1);
  EXPECT_EQ(Refusal(l), "");
}

// mpirun inside an allocation: the ranks inherit the batch step's (or
// orted's step's) SLURM_PROCID = 0, which must not be taken for the rank.
TEST(Launcher, OpenMpiInsideSlurm) {
  LaunchInfo l = From({{"OMPI_COMM_WORLD_SIZE", "4"},
                       {"OMPI_COMM_WORLD_RANK", "3"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                       {"PMIX_RANK", "3"},
                       {"SLURM_JOB_ID", "12"},
                       {"SLURM_STEP_ID", "0"},
                       {"SLURM_STEP_NUM_TASKS", "1"},
                       {"SLURM_PROCID", "0"},
                       {"SLURM_LOCALID", "0"},
                       {"SLURM_CPUS_ON_NODE", "2"}},
                      "orted");
  EXPECT_EQ(l.kind, LaunchInfo::Kind::kOpenMpi);
  EXPECT_EQ(l.rank, 3);
  EXPECT_EQ(l.size, 4);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.local_size, 2);
  EXPECT_EQ(l.Describe(),
            "launched by mpirun (Open MPI) in Slurm job 12, 2 ranks per node "
            "(2 CPUs allotted)");
  EXPECT_EQ(Refusal(l), "");
}

TEST(Launcher, SrunPmix) {
  LaunchInfo l = From({{"PMIX_RANK", "3"},
                       {"SLURM_JOB_ID", "2"},
                       {"SLURM_STEP_ID", "0"},
                       {"SLURM_PROCID", "3"},
                       {"SLURM_LOCALID", "0"},
                       {"SLURM_NODEID", "2"},
                       {"SLURM_STEP_NUM_TASKS", "4"},
                       {"SLURM_STEP_NUM_NODES", "3"},
                       {"SLURM_STEP_TASKS_PER_NODE", "2,1(x2)"},
                       {"SLURM_CPUS_ON_NODE", "1"}});
  EXPECT_EQ(l.kind, LaunchInfo::Kind::kSrunPmix);
  EXPECT_EQ(l.rank, 3);
  EXPECT_EQ(l.size, 4);
  EXPECT_EQ(l.local_rank, 0);
  EXPECT_EQ(l.local_size, 1);
  EXPECT_EQ(l.node, 2);
  EXPECT_EQ(l.num_nodes, 3);
  EXPECT_EQ(l.Describe(),
            "launched by srun --mpi=pmix in Slurm job 2, 1 rank per node (1 "
            "CPUs allotted)");
  EXPECT_EQ(Refusal(l), "");
}

TEST(Launcher, TasksPerNodeLists) {
  auto local_size = [](const std::string& list, const std::string& node) {
    return From({{"PMIX_RANK", "0"},
                 {"SLURM_STEP_ID", "0"},
                 {"SLURM_PROCID", "0"},
                 {"SLURM_NODEID", node},
                 {"SLURM_STEP_TASKS_PER_NODE", list}})
        .local_size;
  };
  EXPECT_EQ(local_size("2(x2)", "1"), 2);
  EXPECT_EQ(local_size("3,2(x2),1", "0"), 3);
  EXPECT_EQ(local_size("3,2(x2),1", "2"), 2);
  EXPECT_EQ(local_size("3,2(x2),1", "3"), 1);
  EXPECT_EQ(local_size("3,2(x2),1", "4"), -1);  // no such node
  EXPECT_EQ(local_size("2(x", "0"), -1);        // malformed
  EXPECT_EQ(local_size("", "0"), -1);
}

TEST(Launcher, SrunWithoutPmiRefusedForSeveralTasks) {
  Vars vars = {{"SLURM_JOB_ID", "5"},
               {"SLURM_STEP_ID", "0"},
               {"SLURM_PROCID", "1"},
               {"SLURM_STEP_NUM_TASKS", "4"}};
  LaunchInfo l = From(vars);
  EXPECT_EQ(l.kind, LaunchInfo::Kind::kSrunNoPmi);
  const std::string why = Refusal(l);
  EXPECT_NE(why.find("srun started 4 tasks with no PMI"), std::string::npos)
      << why;
  EXPECT_NE(why.find("srun --mpi=pmix"), std::string::npos) << why;
  // One task is one process training alone, as asked.
  vars["SLURM_STEP_NUM_TASKS"] = "1";
  vars["SLURM_PROCID"] = "0";
  EXPECT_EQ(Refusal(From(vars)), "");
}

TEST(Launcher, SrunPmi2Refused) {
  LaunchInfo l = From({{"SLURM_STEP_ID", "0"},
                       {"SLURM_PROCID", "0"},
                       {"SLURM_STEP_NUM_TASKS", "2"},
                       {"PMI_FD", "11"},
                       {"PMI_RANK", "0"},
                       {"PMI_SIZE", "2"}});
  EXPECT_EQ(l.kind, LaunchInfo::Kind::kSrunPmi2);
  const std::string why = Refusal(l);
  EXPECT_NE(why.find("no PMI-2 client"), std::string::npos) << why;
  EXPECT_NE(why.find("srun --mpi=pmix"), std::string::npos) << why;
}

// LaunchRefusal (what the Python package asks) says what CheckLaunch
// throws, and nothing for a launch it accepts.
TEST(Launcher, LaunchRefusalIsCheckLaunchsMessage) {
  LaunchInfo l = From({{"SLURM_STEP_ID", "0"},
                       {"SLURM_PROCID", "1"},
                       {"SLURM_STEP_NUM_TASKS", "2"}});
  EXPECT_EQ(LaunchRefusal(l, 0), Refusal(l));
  EXPECT_NE(LaunchRefusal(l, 0).find("with no PMI"), std::string::npos);
  l = From({{"SLURM_STEP_ID", "0"},
            {"SLURM_PROCID", "1"},
            {"SLURM_STEP_NUM_TASKS", "2"},
            {"PMIX_RANK", "1"}});
  EXPECT_EQ(LaunchRefusal(l, 0), "");
}

TEST(Launcher, PmixRankDisagreeingWithSlurmRefused) {
  LaunchInfo l = From({{"PMIX_RANK", "0"},
                       {"SLURM_STEP_ID", "0"},
                       {"SLURM_PROCID", "2"},
                       {"SLURM_STEP_NUM_TASKS", "4"}});
  const std::string why = Refusal(l);
  EXPECT_NE(why.find("PMIX_RANK=0, SLURM_PROCID=2"), std::string::npos) << why;
}

// `srun mpirun -np 4 trainer` in a 2-task step: each task's mpirun starts
// the whole job again.
TEST(Launcher, MpirunPerSrunTaskRefused) {
  Vars vars = {{"OMPI_COMM_WORLD_SIZE", "4"},
               {"OMPI_COMM_WORLD_RANK", "0"},
               {"SLURM_JOB_ID", "9"},
               {"SLURM_STEP_ID", "0"},
               {"SLURM_STEP_NUM_TASKS", "2"}};
  const std::string why = Refusal(From(vars, "mpirun"));
  EXPECT_NE(why.find("mpirun was started by each of the 2 tasks of srun step "
                     "9.0, so 2 copies of a 4-rank job"),
            std::string::npos)
      << why;
  // The same variables under orted (mpirun's daemon, started by its own
  // srun step) are a rank of one job.
  EXPECT_EQ(Refusal(From(vars, "orted")), "");
  // And mpirun run once, in the batch script, has no step.
  vars.erase("SLURM_STEP_ID");
  EXPECT_EQ(Refusal(From(vars, "mpirun")), "");
}

TEST(Launcher, MoreRanksThanAllottedCpusRefused) {
  LaunchInfo l = From({{"OMPI_COMM_WORLD_SIZE", "8"},
                       {"OMPI_COMM_WORLD_RANK", "0"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                       {"SLURM_JOB_ID", "3"},
                       {"SLURM_CPUS_ON_NODE", "2"}},
                      "mpirun");
  const std::string why = Refusal(l);
  EXPECT_NE(why.find("put 4 ranks on this node but Slurm job 3 was allotted "
                     "2 CPU(s) there"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
}

TEST(Launcher, TwoRanksOnOneGpuRefused) {
  LaunchInfo l = From({{"OMPI_COMM_WORLD_SIZE", "2"},
                       {"OMPI_COMM_WORLD_RANK", "0"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}},
                      "mpirun");
  EXPECT_EQ(Refusal(l, 0), "");  // on the CPU
  EXPECT_EQ(Refusal(l, 2), "");  // one GPU each
  const std::string why = Refusal(l, 1);
  EXPECT_NE(why.find("put 2 ranks on this node but they have 1 GPU(s)"),
            std::string::npos)
      << why;
}

TEST(Launcher, KubeflowMpiJobHostfile) {
  LaunchInfo l = From({{"OMPI_COMM_WORLD_SIZE", "4"},
                       {"OMPI_COMM_WORLD_RANK", "1"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                       {"OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"}},
                      "orted");
  EXPECT_EQ(l.hostfile, "/etc/mpi/hostfile");
  EXPECT_EQ(l.Describe(),
            "launched by mpirun (Open MPI) with hostfile /etc/mpi/hostfile, 2 "
            "ranks per node");
}

TEST(Launcher, MpichStylePmi) {
  LaunchInfo l = From({{"PMI_RANK", "2"},
                       {"PMI_SIZE", "3"},
                       {"MPI_LOCALRANKID", "0"},
                       {"MPI_LOCALNRANKS", "1"}});
  EXPECT_EQ(l.kind, LaunchInfo::Kind::kPmi);
  EXPECT_EQ(l.rank, 2);
  EXPECT_EQ(l.size, 3);
  EXPECT_EQ(l.local_size, 1);
}

}  // namespace
}  // namespace fluid
