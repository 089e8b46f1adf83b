// Checkpointing a training job and resuming it where a checkpoint left it,
// on the same or another number of ranks, and the fault-injection hook the
// restart tests use.
//
// A position is kept in samples, not steps: a checkpoint records how many
// samples of its epoch's shuffled order all ranks together have trained on,
// and the global batch (samples per step over all ranks). A job resumed on
// N' ranks keeps that global batch (global / N' per rank) and starts the
// epoch at that sample (Batcher::StartEpoch), so every later step trains on
// the samples it would have trained on without the interruption, with the
// same learning rate. The functions are stateless and thread-safe.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "proto/framework.pb.h"

namespace fluid {

class MPIExecutor;
class Scope;
struct CheckpointInfo;
struct TrainerOptions;

// Where training picks up: epochs completed, the global step, the samples
// of epoch `epoch` already trained on, and the global batch and rank count
// of the run that took the checkpoint (0: not recorded, as in a fresh start
// or a checkpoint an older build took at an epoch's end).
struct ResumePoint {
  int64_t epoch = 0;
  int64_t step = 0;
  int64_t epoch_samples = 0;
  int64_t global_batch = 0;
  int64_t nranks = 0;
};

// The batch per rank on `world` ranks: `batch_size` when the point records
// no global batch; otherwise the checkpoint's global batch divided among
// `world` ranks (a kInvalidArgument error naming both when it does not
// divide). When that differs from `batch_size` a line on `log` says why.
int64_t ResumedBatchSize(const ResumePoint& at, int64_t batch_size, int world,
                         std::ostream& log);

// Checks that `at` fits a training set of `samples` samples (a checkpoint
// taken with other --data or --train-samples does not) and prints where
// training continues on `log`.
void CheckAndLogResumePoint(const ResumePoint& at, int64_t samples,
                            int64_t batch_size, int world, std::ostream& log);

// Rank 0's check, before loading it, that checkpoint `at` suits a run of
// `epochs` epochs over `samples` training samples (a CheckpointFitCheck):
// no more epochs done than the run has, none of epoch `epochs` begun, and
// a position within the training set. A kInvalidArgument error says which
// fails; LoadCheckpoint refuses a checkpoint sealed by its checksum for it
// and skips an older build's unsealed one (a flipped bit, maybe).
void CheckCheckpointFits(const CheckpointInfo& at, int64_t epochs,
                         int64_t samples);

// Saves a training job's checkpoints into o.checkpoint_dir (nothing when it
// is empty), recording the position and the global batch. Every rank calls
// Save at the same steps: the ranks' running statistics are averaged first
// (a collective); rank 0 writes, after checking that its launcher is still
// there. Holds references only; one per job, not thread-safe.
struct CheckpointSaver {
  const TrainerOptions& o;
  const Scope& scope;
  const std::vector<std::string>& persistable;
  MPIExecutor* dist;  // null in a single process
  int rank;
  int world;
  int64_t global_batch;  // samples per step over all ranks
  std::ostream& log;
  // Recorded in each checkpoint (SavedLayout).
  proto::CheckpointManifest::Layout layout = {};
  std::map<std::string, std::string> splits = {};

  // After global step `step`, with `epochs` epochs completed and
  // `epoch_samples` samples of the next one trained on.
  void Save(int64_t step, int64_t epochs, int64_t epoch_samples);
  // Rank 0's part: writes the checkpoint and says so.
  void Write(int64_t step, int64_t epochs, int64_t epoch_samples);
};

// The layout a checkpoint of `job` (as it runs: transpiled) records:
// ranks, sharding stage, mixed precision, and which of its tensors are
// split across the ranks in training (`sharded`, e.g. MPIExecutor's
// sharded_checkpoint_vars()).
void SavedLayout(const proto::TrainingJob& job, int world,
                 const std::vector<std::string>& sharded,
                 CheckpointSaver* saver);

// For the restart tests: SIGKILLs this process right after global step
// `step` when the environment has FLUID_TEST_KILL_AT_STEP=step and
// FLUID_TEST_KILL_RANK=rank (default 0), on a job's first attempt only
// (FLUID_RESTART_ATTEMPT unset or 0; tools/fluidrun exports it), so that
// the restarted job gets past that step. Does nothing otherwise.
void KillForTestIfAsked(int64_t step, int rank);

}  // namespace fluid
