// ShardState: everything one rank keeps for a job whose optimizer state (or
// parameters, between overlapped gathers) is sharded, in one owner:
//
// - the parameter all-gathers a step leaves in flight, and the scope's
//   fence over them (Scope::SetFence): every other reader of the scope
//   (executors, checkpoints, the Python scope) waits for them through
//   Scope::Settle, and nobody else places a wait;
// - the checkpoint plan: the unsharded program a checkpoint holds, and the
//   programs that move optimizer state between this rank's shard and the
//   per-parameter form a checkpoint stores, so that a checkpoint resumes
//   sharded or not, on any number of ranks.
//
// MPIExecutor holds one and forwards to it; a job that is not sharded
// leaves it empty, and every call is then a no-op.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proto/framework.pb.h"
#include "src/distributed/communicator.h"
#include "src/framework/executor.h"

namespace fluid {

class ShardState {
 public:
  ShardState(Executor* exe, Communicator* comm) : exe_(exe), comm_(comm) {}
  // Nothing may write into the scope once this is gone: waits for the
  // gathers in flight (none when the scope went first: its end waited).
  ~ShardState() { WaitGathers(); }
  ShardState(const ShardState&) = delete;
  ShardState& operator=(const ShardState&) = delete;

  // Takes `prepared`, the job as it runs on this rank (PrepareJob's), made
  // from `plain`, the job as given, on `scope`; waits for the previous
  // job's gathers and forgets its plan first. With `create`, the scope was
  // initialised by `plain`'s startup (not `prepared`'s): the shard state it
  // lacks is created and the per-parameter state the sharded program no
  // longer reads is freed, which is what makes the optimizer's memory 1/N.
  // Call before preparing the main program.
  void Begin(const proto::TrainingJob& plain,
             const proto::TrainingJob& prepared, Scope* scope, bool create);
  // After the main program is prepared: the checkpoint plan, when `plain`
  // was unsharded (a job that came sharded has none).
  void Plan(const proto::TrainingJob& plain,
            const proto::TrainingJob& prepared);

  // The ranks the state is sharded over, and whether they are a
  // data-parallel ring (tensor or pipeline parallelism: ring 2 of `comm`),
  // whose id the checkpoint plan's collectives then carry. Call before Begin.
  void SetGroup(Communicator* comm, bool data_parallel_ring) {
    comm_ = comm;
    data_parallel_ring_ = data_parallel_ring;
  }

  // Whether a step leaves parameter gathers in flight.
  bool overlaps_gathers() const { return !gather_handles_.empty(); }
  // After a step that left gathers in flight: the scope's fence is this.
  void FenceStep();
  // Waits for the gathers in flight now; nothing when none is.
  void WaitGathers();

  // The program whose persistable vars a checkpoint holds: the unsharded
  // program when there is a plan, else `main`.
  const proto::ProgramDesc& checkpoint_program(
      const proto::ProgramDesc& main) const;
  // After Plan, for a job started from what the scope held (Begin's
  // `create`): puts `held` (the tensors of the plain program's persistable
  // vars the scope held before Begin, e.g. a checkpoint loaded before the
  // first run) back into the per-parameter state the plan freed. True when
  // it did, and the caller must then give every rank rank 0's values and
  // scatter them (MPIExecutor::BroadcastPersistables).
  bool Restore(std::vector<std::pair<std::string, Tensor>>* held);
  // The checkpoint's per-parameter optimizer state (empty without a plan).
  const std::vector<std::string>& per_parameter_state() const {
    return per_parameter_state_;
  }
  // Collective, before saving a checkpoint: fills the per-parameter state
  // from every rank's shard; DropGathered frees it after the save. With
  // `parameters_only`, the parameters a stage 3 job keeps as shards only
  // (what an evaluation reads).
  void Gather(bool parameters_only = false);
  void DropGathered();
  // Collective, after rank 0 loaded a checkpoint and its vars were
  // broadcast: when rank 0 loaded per-parameter state, every rank takes
  // it, copies its shard into its shard state and frees it again.
  void ScatterLoaded();

 private:
  void CreateState(const proto::TrainingJob& plain,
                   const proto::TrainingJob& prepared);
  void WaitHandles();

  Executor* exe_;
  Communicator* comm_;
  bool data_parallel_ring_ = false;
  Scope* scope_ = nullptr;
  bool sharded_ = false;
  // The persistable handles of overlapped parameter gathers, and whether
  // some are in flight.
  std::vector<std::string> gather_handles_;
  bool pending_ = false;
  // The plan: the unsharded main program (what checkpoints hold), and the
  // programs between shard state and per-parameter state.
  proto::ProgramDesc unsharded_main_;
  std::unique_ptr<PreparedProgram> gather_, gather_parameters_, scatter_;
  std::vector<std::string> per_parameter_state_;
};

}  // namespace fluid
