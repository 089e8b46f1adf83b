#include "src/trainer/resume.h"

#include <csignal>
#include <cstdlib>
#include <ostream>
#include <sstream>
#include <string>

#include "src/distributed/launcher.h"
#include "src/framework/enforce.h"
#include "src/io/checkpoint.h"
#include "src/runtime/mpi_executor.h"
#include "src/trainer/trainer.h"
#include "transpiler/gradient_merge.h"

namespace fluid {

namespace {

// The environment variable `name` as an integer; `fallback` when unset or
// not a number.
int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  return *end == '\0' ? static_cast<int64_t>(x) : fallback;
}

// Refuses a position beyond the training set; `who` starts the message
// ("it", "--resume: the checkpoint").
void CheckPositionInData(const char* who, int64_t epoch, int64_t epoch_samples,
                         int64_t samples) {
  FLUID_ENFORCE(epoch_samples >= 0 && epoch_samples <= samples, who,
                " stands at sample ", epoch_samples, " of epoch ", epoch + 1,
                ", beyond the ", samples,
                " training samples: was it taken with other --data or "
                "--train-samples?");
}

}  // namespace

int64_t ResumedBatchSize(const ResumePoint& at, int64_t batch_size, int world,
                         std::ostream& log) {
  if (at.global_batch <= 0) return batch_size;
  FLUID_ENFORCE(at.global_batch % world == 0, "--resume on ", world,
                " rank(s): the checkpoint's global batch of ", at.global_batch,
                " samples per step (", at.nranks,
                " rank(s)) does not divide among ", world,
                " ranks; resume on a number of ranks that divides it");
  const int64_t per_rank = at.global_batch / world;
  if (per_rank != batch_size) {
    log << "resuming on " << world << " rank(s), the checkpoint was taken on "
        << at.nranks << ": batch " << per_rank
        << " per rank keeps its global batch of " << at.global_batch
        << " (--batch-size " << batch_size << " not used)\n";
  }
  return per_rank;
}

void CheckAndLogResumePoint(const ResumePoint& at, int64_t samples,
                            int64_t batch_size, int world, std::ostream& log) {
  CheckPositionInData("--resume: the checkpoint", at.epoch, at.epoch_samples,
                      samples);
  if (at.global_batch <= 0 && at.epoch_samples == 0) return;
  log << "resume position: epoch " << at.epoch + 1 << " at sample "
      << at.epoch_samples << " of " << samples << ", step " << at.step
      << "; global batch " << batch_size * world << " (" << batch_size
      << " per rank x " << world << " rank(s))\n";
}

void CheckCheckpointFits(const CheckpointInfo& at, int64_t epochs,
                         int64_t samples) {
  FLUID_ENFORCE(at.epoch <= epochs, "it has ", at.epoch,
                " epoch(s) done, more than --epochs ", epochs,
                " (resume with --epochs ", at.epoch, " or more)");
  FLUID_ENFORCE(at.epoch < epochs || at.epoch_samples == 0,
                "it stands at sample ", at.epoch_samples, " of epoch ",
                at.epoch + 1, ", beyond --epochs ", epochs,
                " (resume with --epochs ", at.epoch + 1, " or more)");
  CheckPositionInData("it", at.epoch, at.epoch_samples, samples);
}

void CheckpointSaver::Save(int64_t step, int64_t epochs,
                           int64_t epoch_samples) {
  if (o.checkpoint_dir.empty()) return;
  // Every rank: the checkpoint holds the ranks' average running stats, and
  // a sharded optimizer's state gathered per parameter (freed afterwards).
  if (dist != nullptr) {
    dist->SyncRunningStats();
    dist->GatherShardState();
  }
  if (rank == 0) Write(step, epochs, epoch_samples);
  if (dist != nullptr) dist->DropGatheredState();
}

void CheckpointSaver::Write(int64_t step, int64_t epochs,
                            int64_t epoch_samples) {
  std::ostringstream where;
  if (epoch_samples == 0) {
    where << "epoch " << epochs;
  } else {
    where << "epoch " << epochs + 1 << " at sample " << epoch_samples;
  }
  FLUID_ENFORCE_CODE(LauncherAlive(), ErrorCode::kAborted,
                     "the launcher (mpirun) is gone: not writing the "
                     "checkpoint of ",
                     where.str());
  CheckpointInfo info{step, epochs};
  info.epoch_samples = epoch_samples;
  info.global_batch = global_batch;
  info.nranks = world;
  info.layout = layout;
  info.splits = splits;
  SaveCheckpoint(scope, persistable, o.checkpoint_dir, info);
  log << "checkpoint saved to " << o.checkpoint_dir << " (" << where.str()
      << ", step " << step << ")\n";
  log.flush();
}

void SavedLayout(const proto::TrainingJob& job, int world,
                 const std::vector<std::string>& sharded,
                 CheckpointSaver* saver) {
  const proto::DistributedStrategy& s = job.strategy();
  proto::CheckpointManifest::Layout& layout = saver->layout;
  layout.set_nranks(world);
  const int stage = s.sharding() ? s.sharding_configs().stage() : 0;
  if (world > 1 && stage > 0) layout.set_sharding_stage(stage);
  layout.set_amp(job.main().mixed_precision());
  // Read from the program, which Python's GradientMergeOptimizer may have
  // rewritten without the strategy.
  const int merge = GradientMergeSteps(job.main());
  if (merge > 1) layout.set_gradient_merge_steps(merge);
  for (const std::string& name : sharded)
    saver->splits[name] = "1/" + std::to_string(world) +
                          " per rank (sharding stage " + std::to_string(stage) +
                          ")";
}

void KillForTestIfAsked(int64_t step, int rank) {
  static const int64_t kill_at = EnvInt("FLUID_TEST_KILL_AT_STEP", -1);
  if (kill_at < 0 || step != kill_at) return;
  if (EnvInt("FLUID_TEST_KILL_RANK", 0) != rank) return;
  if (EnvInt("FLUID_RESTART_ATTEMPT", 0) != 0) return;
  std::raise(SIGKILL);
}

}  // namespace fluid
