// TensorParallelState: what one rank keeps for a job whose layers are split
// across a tensor-parallel group (transpiler/tensor_parallel.h):
//
// - the communicator groups: the tensor-parallel ring of tp consecutive
//   ranks and the data-parallel ring of the ranks with the same position in
//   theirs, made (collectively) when the job begins;
// - the split persistable vars (the startup program's c_split ops), so
//   that values arriving whole (a checkpoint loaded, a plain startup run
//   before the job was known) are cut to this rank's slice, and so that a
//   checkpoint holds them whole, gathered over the group before a save:
//   a tensor-parallel job's checkpoints load under any layout, and any
//   layout's into it.
//
// MPIExecutor holds one; a job without tensor parallelism leaves it empty,
// and every call is then a no-op.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "proto/framework.pb.h"
#include "src/distributed/communicator.h"
#include "src/framework/executor.h"

namespace fluid {

class TensorParallelState {
 public:
  TensorParallelState(Executor* exe, Communicator* comm)
      : exe_(exe), comm_(comm) {}

  // Takes `prepared` (PrepareJob's job) on `scope`; with tensor
  // parallelism makes the rings (collective: every rank calls it). Call
  // before the job's startup program runs (its c_split ops need ring 1).
  // The split vars are those the startup programs of `prepared` and
  // `plain` (the split job before sharding, whose startup still slices
  // the per-parameter state that sharding makes as shards) slice.
  void Begin(const proto::TrainingJob& prepared,
             const proto::TrainingJob& plain, Scope* scope);
  bool active() const { return tp_ > 1; }

  // Whether `name` is split across the group (ranks of one group hold
  // different slices of it; ranks of one data-parallel group the same).
  bool IsSplit(const std::string& name) const { return axis_.count(name) > 0; }
  // Whether the scope holds `name` whole (its value as one rank would
  // have it) rather than as this rank's slice.
  bool HoldsWhole(const std::string& name) const;
  // The ring that compares or broadcasts `name` across copies that must be
  // equal: the data-parallel group for a split var, every rank otherwise.
  Communicator* ReplicaGroup(const std::string& name) const;

  // After the checkpoint plan: `saved` (the program whose persistable vars
  // a checkpoint holds) with the split vars whole, which is what this
  // job's checkpoints hold and what it loads.
  void Plan(const proto::ProgramDesc& saved);
  const proto::ProgramDesc& checkpoint_program() const { return whole_; }

  // Collective (BroadcastPersistables): every rank takes rank 0's value
  // of split var `name`: whole, when rank 0 holds it whole (a checkpoint
  // it loaded; SliceWhole then cuts each rank's slice), else each slice
  // from the first rank of its data-parallel group.
  void Broadcast(const std::string& name);

  // Cuts every split var the scope holds whole to this rank's slice.
  // Collective over the group (each rank cuts its own; no data moves).
  void SliceWhole();
  // Before a checkpoint: every split var whole on every rank, gathered
  // over the group; DropGathered puts the slices back. Collective.
  void Gather();
  void DropGathered();

 private:
  // Runs one op per var of `vars` (c_split or c_concat).
  void RunEach(const std::string& type, const std::vector<std::string>& vars,
               const std::string& suffix);

  Executor* exe_;
  Communicator* comm_;
  Scope* scope_ = nullptr;
  int tp_ = 1;
  std::map<std::string, int> axis_;            // split var -> axis
  std::map<std::string, Shape> sliced_shape_;  // as the job declares it
  std::vector<std::pair<std::string, Tensor>> slices_;  // kept by Gather
  proto::ProgramDesc whole_;                            // Plan's
};

}  // namespace fluid
