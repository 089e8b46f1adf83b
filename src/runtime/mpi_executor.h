// MPIExecutor: runs a training job data-parallel on every rank of a
// communicator, with no parameter server.
//
// Init() takes a job in any form PrepareJob (transpiler/distributed_job.h)
// prepares for the communicator's size without servers: plain (transpiled
// here) or already transpiled for this world size; checks that every rank holds
// the same program (comparing a hash of its structure across ranks before any
// other collective: the error names the ranks that differ); runs the startup
// program, whose broadcasts give every rank rank 0's parameters; and prepares
// the main program. Run() then runs one step on this rank's shard. Not
// thread-safe; one per rank. The scope given to Init must outlive it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/distributed/communicator.h"
#include "src/distributed/global_communicator.h"
#include "src/distributed/topology.h"
#include "src/framework/executor.h"
#include "src/runtime/pipeline_state.h"
#include "src/runtime/shard_state.h"
#include "src/runtime/tensor_parallel_state.h"
#include "transpiler/distributed_job.h"

namespace fluid {

class MPIExecutor {
 public:
  // `comm` defaults to the process's global communicator (made for
  // `place`). A CUDA place runs every kernel on that device; see
  // LocalRankDevice() for the usual choice under mpirun.
  explicit MPIExecutor(Place place = Place::CPU(), int num_threads = 1,
                       Communicator* comm = nullptr);
  ~MPIExecutor();
  MPIExecutor(const MPIExecutor&) = delete;
  MPIExecutor& operator=(const MPIExecutor&) = delete;

  int rank() const { return comm_->rank(); }
  int world_size() const { return comm_->size(); }
  Communicator* communicator() const { return comm_; }
  Executor* executor() { return &exe_; }

  // Runs a startup program once on `scope`, on every rank, with a
  // broadcast from rank 0 of every persistable var it initialises (added
  // unless it has them), after checking that every rank holds the same
  // startup program. Collective: every rank calls it.
  // `defer_parameter_state` (a sharded job's, before its training program
  // is known): the fill_constant initialisers of state shaped and named
  // after a parameter (`<param>_moment1_0`: the optimizer's accumulators)
  // are left out, so that this state never exists whole: the first Init
  // makes the shards of it (or, unsharded, the missing state) instead.
  void RunStartup(const proto::ProgramDesc& startup, Scope* scope,
                  bool defer_parameter_state = false);

  // Prepares `job` for this communicator's ranks as `strategy` says
  // (PrepareJob; a job transpiled already keeps the strategy it carries),
  // after checking that every rank passes the same strategy, field by
  // field (a difference is an error naming the field and the ranks), and
  // the same program. With `run_startup` false the job's startup program
  // is not run: `scope` already holds its values (see RunStartup), and
  // they are left as they are.
  void Init(const proto::TrainingJob& job, Scope* scope,
            const proto::DistributedStrategy& strategy = {},
            bool run_startup = true);

  void Run(const FeedList& feeds, const std::vector<std::string>& fetch_names,
           std::vector<Tensor>* fetches);

  // Waits for the parameter all-gathers a sharded job with overlapped
  // gathers leaves in flight at the end of each step (the next step waits
  // for each just before it reads the bucket). Nobody needs to call it to
  // read the scope: the job's ShardState is the scope's fence, which every
  // other reader passes through (executors, checkpoints, the Python
  // scope). It is here for timing a run to its end. Nothing when no gather
  // is in flight.
  void WaitParameterGathers() { shard_.WaitGathers(); }

  // Gives every rank rank 0's value of every var a checkpoint holds (after
  // loading one on rank 0); a sharded job's ranks then take their shards of
  // the optimizer state from them.
  void BroadcastPersistables();

  // The program whose persistable vars a checkpoint of this job holds: the
  // main program, or for a sharded optimizer the unsharded one's, so that
  // its checkpoints resume sharded or not, on any number of ranks.
  // With tensor parallelism the split vars are whole in it.
  // With pipeline stages it holds every stage's persistables.
  const proto::ProgramDesc& checkpoint_program() const {
    if (pp_.active()) return pp_.checkpoint_program();
    return tp_.active() ? tp_.checkpoint_program()
                        : shard_.checkpoint_program(job_.main());
  }
  // Sharded optimizer, collective, before saving a checkpoint: fills the
  // per-parameter optimizer state (the checkpoint's) from every rank's
  // shard; DropGatheredState frees it again after the save. Nothing for an
  // unsharded job. `parameters_only`: stage 3's parameter shards only (an
  // evaluation's).
  // A tensor-parallel job's split parameters and their optimizer state
  // are gathered whole too (checkpoints and evaluations read them whole),
  // and a pipeline's every stage's persistables reach every rank.
  void GatherShardState(bool parameters_only = false) {
    shard_.Gather(parameters_only);
    tp_.Gather();
    pp_.Gather();
  }
  void DropGatheredState() {
    pp_.DropGathered();
    tp_.DropGathered();
    shard_.DropGathered();
  }
  // The pipeline stage this rank runs (0 without pipeline stages).
  int pipeline_stage() const { return pp_.stage(); }
  // The checkpoint's vars that ranks hold split in training (a sharded
  // job's per-parameter optimizer state; none otherwise).
  const std::vector<std::string>& sharded_checkpoint_vars() const {
    return shard_.per_parameter_state();
  }

  // Makes every rank's batch norm running statistics the average of the
  // ranks' (the job's StatSyncProgram): each rank moves them toward its own
  // batches in training, and they must agree before a checkpoint or an
  // evaluation. Nothing when the job has no batch_norm. Collective, after
  // Init.
  void SyncRunningStats();

  // Compares a checksum of every parameter (every persistable var but the
  // batch norm running statistics) across ranks; a mismatch is an
  // error naming the first parameter that differs and the ranks.
  void CheckConsistency();

  // After a step: the first averaged gradient holding a NaN or an
  // infinity, or "" when all are finite. The averaged gradients are equal
  // on every rank, so every rank gets the same answer at the same step.
  std::string NonFiniteGradient() const;
  // Where a non-finite gradient came from: the ranks whose last step was
  // fed a NaN or an infinity, e.g. "rank 1 (feed 'x')", joined by ", ";
  // "" when no rank was (the training diverged). Collective: every rank
  // calls it at the step NonFiniteGradient answered.
  std::string NonFiniteFeeds();

  const proto::TrainingJob& job() const { return job_; }
  // The hosts the ranks run on (gathered by Init).
  const Topology& topology() const { return topology_; }
  PreparedProgram* main_program() { return main_.get(); }

 private:
  // Every rank passes the same strategy (CheckRunSettingsAgree over its
  // fields, so a new field is compared without code).
  void CheckStrategyAgrees(const proto::DistributedStrategy& strategy);
  // BroadcastPersistables' part for the per-parameter state of a sharded
  // tensor-parallel job: every rank takes what rank 0 loaded (nothing when
  // it loaded none), whole, so that each cuts its slice.
  void BroadcastLoadedState(const proto::VarDesc& v);
  // Ends with an error naming the ranks whose `mine` differs from rank 0's.
  void CheckSameProgram(uint64_t mine, const char* what);

  Communicator* comm_;
  Executor exe_;
  Scope* scope_ = nullptr;
  proto::TrainingJob job_;
  Topology topology_;
  std::unique_ptr<PreparedProgram> main_;
  std::unique_ptr<PreparedProgram> stat_sync_;  // null: nothing to sync
  std::vector<std::string> persistables_;
  // The gathers in flight and the checkpoint plan of a sharded job.
  ShardState shard_;
  // The rings and split vars of a tensor-parallel job.
  TensorParallelState tp_;
  // The rings and the stages' persistables of a pipeline.
  PipelineState pp_;
  // The c_allreduce buffers, each with the gradients it holds (empty when
  // it is a gradient itself).
  std::vector<std::pair<std::string, std::vector<std::string>>> averaged_;
  mutable Tensor finite_staging_;  // NonFiniteGradient's host copies
};

}  // namespace fluid
