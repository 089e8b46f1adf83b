// PipelineState: what one rank keeps for a job cut into pipeline stages
// (transpiler/pipeline.h):
//
// - the communicator groups, made (collectively) when the job begins: the
//   data-parallel ring of the ranks of this rank's stage, the pipeline ring
//   of the ranks at this rank's position in every stage, and the two-rank
//   rings of the cuts before and after this rank's stage (one per
//   direction) that carry the activations and their gradients;
// - which stage holds each persistable var, so that a checkpoint holds
//   every stage's (gathered over the pipeline before a save, dropped
//   after) and an evaluation reads the whole model, and so that a
//   checkpoint loaded on rank 0 reaches the stage that owns each var.
//
// MPIExecutor holds one; a job without pipeline stages leaves it empty,
// and every call is then a no-op.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "proto/distributed_strategy.pb.h"
#include "proto/framework.pb.h"
#include "src/distributed/communicator.h"
#include "src/framework/scope.h"
#include "transpiler/pipeline.h"

namespace fluid {

class PipelineState {
 public:
  explicit PipelineState(Communicator* comm) : comm_(comm) {}

  // Takes `plain` (the job before the collective rewrite, its local
  // rewrites done, with the canonical strategy) on `scope`; with pipeline
  // stages makes the rings. Collective: every rank calls it, before the
  // startup program runs.
  void Begin(const proto::TrainingJob& plain, Scope* scope);
  bool active() const { return pp_ > 1; }
  int stage() const { return stage_; }
  // The ranks of this rank's stage that hold the same values.
  Communicator* data_parallel_group() const;

  // Every stage's persistables (what a checkpoint holds).
  const proto::ProgramDesc& checkpoint_program() const { return whole_; }
  // Collective over the pipeline: every rank holds every stage's
  // persistables, each broadcast from the rank of its stage at this rank's
  // position; DropGathered frees the other stages' again.
  void Gather();
  void DropGathered();
  // Collective: what rank 0 holds of each stage's persistables (a
  // checkpoint it loaded) reaches the owner stage's first rank, then the
  // rest of that stage; vars rank 0 did not load are left alone.
  void BroadcastLoaded();
  // Collective over this rank's stage, after BroadcastLoaded: every
  // persistable of `stage_main` takes the value of the stage's first rank
  // (whole, when it holds it whole: a tensor-parallel slice is cut from it
  // afterwards). With `only`, over ring `ring_id` (a ring inside the
  // stage), and only those of the persistables.
  void BroadcastWithinStage(const proto::ProgramDesc& stage_main,
                            int ring_id = kStageRing,
                            const std::set<std::string>* only = nullptr);
  // Frees the other stages' persistables this rank holds (a plain startup
  // run before the job was known makes every stage's): between steps a
  // rank holds its own stage's only, and stale copies are never read.
  void DropOtherStages();
  // Whether any rank's `mine` is true (without a pipeline: `mine`). The
  // stages plan apart (one whose parameters all stay whole, an embedding's
  // sparse table, shards nothing), but some steps are the whole
  // pipeline's, which every rank joins if any needs them.
  bool AnyRank(bool mine);

 private:
  Communicator* comm_;
  Scope* scope_ = nullptr;
  int pp_ = 1, stage_ = 0;
  std::map<std::string, int> owner_;  // persistable -> its stage (-1: all)
  proto::ProgramDesc whole_;
  std::vector<std::string> gathered_;
};

}  // namespace fluid
