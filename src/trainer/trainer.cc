#include "src/trainer/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <thread>

#include "src/builder/models.h"
#include "src/data/batcher.h"
#include "src/data/idx_reader.h"
#include "src/distributed/launcher.h"
#include "src/distributed/mpi_backend.h"
#include "src/distributed/run_settings.h"
#include "src/distributed/stall_watchdog.h"
#include "src/distributed/timeline_session.h"
#include "src/framework/backward.h"
#include "src/framework/cpu_isa.h"
#include "src/framework/device.h"
#include "src/framework/executor.h"
#include "src/framework/loss_scaling_state.h"
#include "src/framework/program_desc.h"
#include "src/io/checkpoint.h"
#include "src/io/job_io.h"
#include "src/runtime/mpi_executor.h"
#include "src/trainer/memory_report.h"
#include "src/trainer/resume.h"
#include "src/trainer/strategy_flags.h"
#include "src/trainer/text_data.h"
#include "transpiler/distributed_job.h"
#include "transpiler/gradient_merge.h"
#include "transpiler/local_rewrites.h"
#include "transpiler/pipeline.h"
#include "transpiler/shard_params.h"
#include "transpiler/sharding.h"
#include "transpiler/strategy.h"
#include "transpiler/tensor_parallel.h"

namespace fluid {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double ScalarOf(const Tensor& t) {
  FLUID_ENFORCE(t.numel() >= 1, "fetched an empty tensor");
  switch (t.dtype()) {
    case DataType::kFloat32:
      return t.data<float>()[0];
    case DataType::kFloat64:
      return t.data<double>()[0];
    case DataType::kInt32:
      return t.data<int32_t>()[0];
    case DataType::kInt64:
      return static_cast<double>(t.data<int64_t>()[0]);
    case DataType::kFloat16:
      return ToFloat(t.data<float16>()[0]);
    case DataType::kBFloat16:
      return ToFloat(t.data<bfloat16>()[0]);
    case DataType::kBool:
      return t.data<bool>()[0] ? 1 : 0;
  }
  return 0;
}

std::string FormatDuration(double s) {
  std::ostringstream os;
  if (s >= 3600) {
    os << static_cast<int>(s / 3600) << "h" << static_cast<int>(s / 60) % 60
       << "m";
  } else if (s >= 60) {
    os << static_cast<int>(s / 60) << "m" << static_cast<int>(s) % 60 << "s";
  } else {
    os << std::fixed << std::setprecision(0) << s << "s";
  }
  return os.str();
}

proto::TrainingJob ObtainJob(const TrainerOptions& o) {
  if (!o.program.empty()) return LoadJob(o.program);
  ModelOptions mo;
  mo.seed = o.seed;
  mo.warmup_steps = o.warmup_steps;
  mo.decay_steps = o.decay_steps;
  if (!o.optimizer.empty() || o.learning_rate > 0) {
    mo.default_optimizer = false;
    mo.optimizer = DefaultOptimizer(o.model);
    if (!o.optimizer.empty() && o.optimizer != mo.optimizer.type) {
      // The model's learning rate is tuned for its own optimizer: another
      // one takes Fluid's default (the Adam family has one), or --lr.
      mo.optimizer.type = o.optimizer;
      const bool adam_family = o.optimizer == "adam" || o.optimizer == "adamax";
      FLUID_ENFORCE(o.learning_rate > 0 || adam_family, "--optimizer ",
                    o.optimizer, " needs --lr: the model's learning rate (",
                    mo.optimizer.learning_rate, ") is tuned for its default ",
                    DefaultOptimizer(o.model).type, ", and Fluid's ",
                    o.optimizer, " optimizer has no default learning rate");
      if (adam_family) mo.optimizer.learning_rate = 0.001f;
    }
    if (o.learning_rate > 0) mo.optimizer.learning_rate = o.learning_rate;
  }
  return BuildModel(o.model, mo);
}

void CheckFeedsMatchData(const proto::TrainingJob& job, const Dataset& data) {
  std::ostringstream have;
  for (int i = 0; i < job.feed_names_size(); ++i)
    have << (i ? ", " : "") << job.feed_names(i);
  FLUID_ENFORCE(
      static_cast<size_t>(job.feed_names_size()) == data.tensors.size(),
      "the program feeds [", have.str(), "] but the data set ", "provides ",
      data.tensors.size(), " tensors (image, label)");
  FLUID_ENFORCE(!job.loss_name().empty(), "the job names no loss var");
}

// A job the trainer can train: its main program updates something, and
// what it reports are variables of the program.
void CheckJobTrains(const proto::TrainingJob& job) {
  const proto::BlockDesc& block = job.main().blocks(0);
  bool updates = false;
  for (const auto& op : block.ops())
    updates = updates || (OpRoleOf(op) & static_cast<int>(OpRole::kOptimize));
  FLUID_ENFORCE(updates,
                "the job's main program has no optimizer op (op_role "
                "optimize): training would change nothing; build it with an "
                "optimizer's minimize(loss)");
  FLUID_ENFORCE(FindVarDesc(block, job.loss_name()) != nullptr,
                "the job's loss ", Quote(job.loss_name()),
                " is not a variable of its main program");
  for (int i = 0; i < job.metric_names_size(); ++i) {
    const std::string& m = job.metric_names(i);
    FLUID_ENFORCE(!m.empty(), "the job's metric ", i, " has an empty name");
    FLUID_ENFORCE(FindVarDesc(block, m) != nullptr, "the job's metric ",
                  Quote(m), " is not a variable of its main program");
  }
}

// The job's feeds, in the order the reader yields them, without values.
FeedList JobFeeds(const proto::TrainingJob& job) {
  FeedList feeds;
  for (const auto& name : job.feed_names()) feeds.emplace_back(name, Tensor());
  return feeds;
}

// Puts one batch from the reader into `feeds` (shared buffers, no copy).
void SetFeeds(const std::vector<Tensor>& batch, FeedList* feeds) {
  for (size_t i = 0; i < feeds->size(); ++i) (*feeds)[i].second = batch[i];
}

// Flight recorder files (flight-rank-R.txt, written next to the
// checkpoints when a job aborts) do not make a checkpoint directory used.
bool IsEmptyOrMissingDir(const std::string& dir) {
  FileSystem* fs = DefaultFileSystem();
  if (!fs->Exists(dir)) return true;
  for (const std::string& name : fs->ListDir(dir))
    if (name.rfind("flight-rank-", 0) != 0) return false;
  return true;
}

// Where training picks up (see src/trainer/resume.h).
using Position = ResumePoint;

// --resume on rank 0: the newest intact checkpoint that suits a run over
// `samples` training samples, or from scratch in an empty directory, or
// (with --start-fresh) in one with nothing usable.
Position LoadNewestCheckpoint(const TrainerOptions& o,
                              const proto::ProgramDesc& main, int64_t samples,
                              Scope* scope, std::ostream& log) {
  const std::string& dir = o.checkpoint_dir;
  if (IsEmptyOrMissingDir(dir)) {
    log << "no checkpoint in " << dir << ": starting from scratch\n";
    return {};
  }
  CheckpointInfo info;
  std::string why_none;
  const CheckpointFitCheck fits = [&](const CheckpointInfo& at) {
    CheckCheckpointFits(at, o.epochs, samples);
  };
  if (TryLoadCheckpoint(scope, main, dir, &info, &why_none, DefaultFileSystem(),
                        fits)) {
    for (const std::string& why : info.skipped)
      log << "skipped a checkpoint: " << why << "\n";
    if (!info.skipped.empty()) {
      // The next save must keep this one, not a damaged one, as fallback.
      RepointLatest(dir, info.path);
    }
    log << "resumed from " << dir << " at epoch " << info.epoch << ", step "
        << info.step << " (" << info.path << ")\n";
    const std::string layout = DescribeLayout(info.layout);
    if (!layout.empty())
      log << "the checkpoint was saved under " << layout << "\n";
    return Position{info.epoch, info.step, info.epoch_samples,
                    info.global_batch, info.nranks};
  }
  FLUID_ENFORCE_CODE(o.start_fresh, ErrorCode::kNotFound,
                     "--resume: no usable checkpoint in non-empty '", dir,
                     "' (", why_none, "); pass --start-fresh to discard it ",
                     "and train from scratch");
  const int removed = RemoveCheckpoints(dir);
  log << "starting fresh in " << dir << " (--start-fresh): no usable "
      << "checkpoint (" << why_none << "); removed " << removed
      << " unusable checkpoint(s)\n";
  return {};
}

// Rank 0 reads the checkpoint; every rank takes its values and position.
Position Resume(const TrainerOptions& o, const proto::ProgramDesc& main,
                int64_t samples, Scope* scope, MPIExecutor* dist, int rank,
                std::ostream& log) {
  Position pos;
  if (rank == 0) pos = LoadNewestCheckpoint(o, main, samples, scope, log);
  if (dist) {
    dist->BroadcastPersistables();
    for (int64_t* v : {&pos.epoch, &pos.step, &pos.epoch_samples,
                       &pos.global_batch, &pos.nranks}) {
      auto all = dist->communicator()->AllGatherValue(*v);
      *v = static_cast<int64_t>(all[0]);
    }
  }
  return pos;
}

// The classes the model scores, from the ops that read `label` through a
// "Label" slot: the last dim of their scores input; -1 when unknown.
int64_t NumClasses(const proto::ProgramDesc& program,
                   const std::string& label) {
  const proto::BlockDesc& block = program.blocks(0);
  int64_t classes = -1;
  for (const proto::OpDesc& op : block.ops()) {
    const std::vector<std::string> labels = OpInput(op, "Label");
    if (std::find(labels.begin(), labels.end(), label) == labels.end())
      continue;
    for (const proto::OpDesc::Var& in : op.inputs()) {
      if (in.parameter() == "Label" || in.arguments_size() == 0) continue;
      const proto::VarDesc* v = FindVarDesc(block, in.arguments(0));
      if (v == nullptr) continue;
      const Shape shape = VarShape(*v);
      if (shape.rank() >= 1 && shape[shape.rank() - 1] > 0) {
        const int64_t c = shape[shape.rank() - 1];
        classes = classes < 0 ? c : std::min(classes, c);
      }
      break;
    }
  }
  return classes;
}

// The test set against the evaluation program, before any training: feed
// count, every label within the model's classes, and one small batch run
// through the program (image size, dtypes).
void CheckTestSet(const TrainerOptions& o, const proto::TrainingJob& job,
                  const proto::ProgramDesc& eval_program, const Dataset& test,
                  Executor* exe, PreparedProgram* eval) {
  const std::string what = "test set in '" + o.data_dir + "'";
  try {
    CheckFeedsMatchData(job, test);
  } catch (const Error& e) {
    FLUID_RETHROW(e, what, ": ", e.what());
  }
  for (size_t i = 0; i < test.tensors.size(); ++i) {
    const Tensor& t = test.tensors[i];
    if (t.dtype() != DataType::kInt64) continue;
    const int64_t classes = NumClasses(eval_program, job.feed_names(i));
    if (classes <= 0) continue;
    const int64_t* d = t.data<int64_t>();
    for (int64_t k = 0; k < t.numel(); ++k) {
      FLUID_ENFORCE(d[k] >= 0 && d[k] < classes, what, ": label ", d[k],
                    " of sample ", k, " is outside the model's ", classes,
                    " classes [0, ", classes, ")");
    }
  }
  Batcher probe(TakeFirst(test, 16), 16, 0, 0, 1, /*shuffle=*/false);
  probe.StartEpoch(0);
  std::vector<Tensor> batch;
  std::vector<Tensor> fetched;
  FeedList feeds = JobFeeds(job);
  if (!probe.Next(&batch)) return;
  SetFeeds(batch, &feeds);
  try {
    exe->Run(eval, feeds, {job.metric_names(0)}, &fetched);
  } catch (const Error& e) {
    FLUID_RETHROW(e, what, " does not fit the evaluation program: ", e.what());
  }
}

// Whether `dist` runs a job whose parameters live as shards (sharding
// stage 3) or slices (tensor parallelism), so that a program reading them
// whole needs them gathered.
bool KeepsParameterShards(MPIExecutor* dist) {
  return dist != nullptr &&
         (!ParamShardBuffers(dist->job().main().blocks(0)).empty() ||
          TensorParallelDegree(dist->job().strategy()) > 1 ||
          PipelineStages(dist->job().strategy()) > 1);
}

// Collective, before rank 0 evaluates after training: the running
// statistics averaged and, under sharding stage 3, the parameters gathered
// whole (as for a checkpoint; the run ends after the evaluation).
void SyncForEvaluation(MPIExecutor* dist) {
  if (dist == nullptr) return;
  dist->SyncRunningStats();
  if (KeepsParameterShards(dist))
    dist->GatherShardState(/*parameters_only=*/true);
}

// Collective: rank 0's evaluation program, prepared and run on a small
// batch of the test set before training (null on the other ranks). Under
// sharding stage 3 every rank gathers the parameters whole for that run
// and frees them after.
std::unique_ptr<PreparedProgram> PrepareEvaluation(
    const TrainerOptions& o, const proto::TrainingJob& job, const Dataset& test,
    Executor* exe, Scope* scope, MPIExecutor* dist, std::ostream& log) {
  const bool gather = KeepsParameterShards(dist);
  if (gather) dist->GatherShardState(/*parameters_only=*/true);
  std::unique_ptr<PreparedProgram> eval;
  if (dist == nullptr || dist->rank() == 0) {
    const proto::ProgramDesc eval_program = EvaluationProgram(job, log);
    eval = exe->Prepare(eval_program, scope);
    CheckTestSet(o, job, eval_program, test, exe, eval.get());
  }
  if (gather) dist->DropGatheredState();
  return eval;
}

// Top-1 accuracy of the first metric over the whole test set.
double Evaluate(const proto::TrainingJob& job, const Dataset& test,
                Executor* exe, PreparedProgram* eval, int64_t* seen) {
  Batcher test_batcher(test, 1000, 0, 0, 1, /*shuffle=*/false);
  test_batcher.StartEpoch(0);
  std::vector<Tensor> batch;
  std::vector<Tensor> fetched;
  FeedList feeds = JobFeeds(job);
  double acc_sum = 0;
  *seen = 0;
  const std::vector<std::string> metric = {job.metric_names(0)};
  while (test_batcher.Next(&batch)) {
    SetFeeds(batch, &feeds);
    exe->Run(eval, feeds, metric, &fetched);
    int64_t n = batch[0].shape()[0];
    acc_sum += ScalarOf(fetched[0]) * n;
    *seen += n;
  }
  return acc_sum / std::max<int64_t>(*seen, 1);
}

// What the evaluation found: the test accuracy, or for a language model
// the validation loss (mean cross entropy per token) and its perplexity.
std::string EvaluationLine(const proto::TrainingJob& job, double metric,
                           int64_t seen, const Dataset& test) {
  char line[160];
  if (!IsLanguageModelJob(job)) {
    std::snprintf(line, sizeof(line), "test accuracy %.4f (%lld samples)",
                  metric, static_cast<long long>(seen));
    return line;
  }
  std::snprintf(line, sizeof(line),
                "validation loss %.4f  perplexity %.3f per token (%lld "
                "windows of %lld tokens)",
                metric, std::exp(metric), static_cast<long long>(seen),
                static_cast<long long>(test.tensors[0].shape()[1]));
  return line;
}

// A pipeline cuts each batch into equal micro-batches.
void CheckMicroBatches(const TrainerOptions& o, const proto::TrainingJob& job,
                       const MPIExecutor* dist) {
  if (dist == nullptr || PipelineStages(job.strategy()) == 1) return;
  FLUID_ENFORCE(o.batch_size % MicroBatches(job.strategy()) == 0,
                "--batch-size ", o.batch_size,
                " is not a multiple of "
                "--micro-batches ",
                MicroBatches(job.strategy()),
                ": each micro-batch must hold as many samples");
}

// The ranks that read samples of their own: all of them, or one per
// tensor-parallel group and pipeline.
int DataWorld(const proto::TrainingJob& job, int world) {
  return DataParallelWorld(job.strategy(), world);
}

// The line that opens training: what runs where.
void LogBanner(const TrainerOptions& o, const proto::TrainingJob& job,
               int64_t samples, int64_t batch_size, int64_t steps_per_epoch,
               const Place& place, int world, MPIExecutor* dist,
               std::ostream& log) {
  log << "training " << (o.program.empty() ? o.model : o.program) << ": "
      << samples << " samples, batch " << batch_size;
  if (world > 1) {
    log << " per rank x " << world << " ranks on "
        << dist->topology().Describe();
    if (const int tp = TensorParallelDegree(dist->job().strategy()); tp > 1)
      log << " (" << DataParallelWorld(dist->job().strategy(), world)
          << " data-parallel x " << tp
          << " tensor-parallel: each batch is split over " << tp
          << " ranks' layers)";
    if (const int pp = PipelineStages(dist->job().strategy()); pp > 1) {
      const proto::DistributedStrategy& s = dist->job().strategy();
      log << " (pipeline of " << pp << " stages, " << MicroBatches(s)
          << " micro-batches " << PipelineSchedule(s);
      if (ForwardsAhead(s) > 0) log << " with " << ForwardsAhead(s) << " ahead";
      log << "; this rank runs stage " << dist->pipeline_stage() << ")";
    }
    const std::string launch = DetectLaunch().Describe();
    if (!launch.empty()) log << ", " << launch;
  }
  log << ", " << steps_per_epoch << " steps/epoch, ";
  if (place.is_cpu()) {
    log << o.threads << " thread(s)" << (world > 1 ? " per rank" : "");
  } else {
    log << "on " << place.ToString() << (world > 1 ? " (rank 0)" : "");
  }
  const std::string& amp = job.main().mixed_precision();
  if (!amp.empty()) {
    log << ", mixed precision " << amp;
    if (place.is_cpu()) log << " (" << HalfComputeDescription() << ")";
  }
  if (const int k = GradientMergeSteps(job.main()); k > 1)
    log << ", gradients merged over " << k << " steps (an update per "
        << k * batch_size * DataWorld(job, world) << " samples)";
  if (world > 1) {
    log << ", gradients over " << dist->communicator()->backend_name();
    if (dist->topology().num_hosts() > 1 &&
        dist->communicator()->backend_name() == "mpi") {
      const bool hier = dist->communicator()->allreduce_algorithm() ==
                        AllReduceAlgorithm::kHierarchical;
      log << (hier ? " (hier: reduced within each host over shared memory, "
                     "then between hosts over the network)"
                   : " (flat: shared memory within a host, the network "
                     "between hosts)");
    }
    const std::string& wire = dist->job().strategy().grad_compression();
    if (wire != "none")
      log << ", float32 gradients as " << wire << " on the wire";
  }
  log << "\n";
  log.flush();
}

// The second line: the memory one rank holds for training state.
void LogStateBytes(const proto::ProgramDesc& main, std::ostream& log) {
  const StateBytes b = PerRankStateBytes(main);
  auto mib = [](int64_t bytes) {
    char s[32];
    std::snprintf(s, sizeof(s), "%.2f MiB", bytes / 1048576.0);
    return std::string(s);
  };
  log << "per rank: parameters " << mib(b.parameters) << ", gradients "
      << mib(b.gradients) << ", optimizer state " << mib(b.optimizer_state)
      << "\n";
}

// Whether training diverged without reaching a NaN (a loss that blows up
// can stay finite, e.g. 5.9e6 for the mlp under Adam at lr 5): the mean loss
// of the run's last kWindow steps against the loss of its first step, the
// model as it started.
class LossTrend {
 public:
  static constexpr int kWindow = 10;

  void Add(double loss) {
    if (count_ == 0) first_ = loss;
    last_[count_ % kWindow] = loss;
    ++count_;
  }

  // An error when, over at least 2 x kWindow steps, the loss ended above 3
  // times its start and more than 1 above it.
  void Check(int rank) const {
    if (count_ < 2 * kWindow) return;
    double last = 0;
    for (int i = 0; i < kWindow; ++i) last += last_[i] / kWindow;
    FLUID_ENFORCE_CODE(!(last > 3 * first_ && last > first_ + 1),
                       ErrorCode::kAborted, "training diverged on rank ", rank,
                       ": the mean loss of the last ", kWindow, " steps is ",
                       last, ", up from ", first_,
                       " at the first step; lower the learning rate (--lr)");
  }

 private:
  double first_ = 0;
  double last_[kWindow] = {};
  int64_t count_ = 0;
};

// The training steps of one rank, one epoch at a time.
struct TrainLoop {
  const TrainerOptions& o;
  const proto::TrainingJob& job;
  Executor* exe;
  PreparedProgram* main;
  MPIExecutor* dist;  // null in a single process
  Batcher* batcher;
  CheckpointSaver* saver;
  int rank;
  int world;  // the ranks reading samples of their own (DataWorld)
  std::ostream& log;
  double slow_step_s = 0;  // the test hook's sleep before each step
  LossTrend trend;
  MemoryMeter* meter;  // the planned peak against the steps'

  // Trains epoch `epoch` from sample position `start_sample` (see
  // Batcher::StartEpoch), advancing `step`, printing progress, checkpointing
  // every o.checkpoint_every steps within the epoch, and storing its loss
  // and accuracy in `result`; returns the samples trained on by all ranks.
  // Whether fp16's dynamic loss scaling skipped the step just run (its
  // gradients overflowed): not an error; counted and logged.
  int64_t skipped = 0;
  bool SkippedByLossScaling() {
    if (job.main().mixed_precision() != "fp16") return false;
    const Scope& scope = *main->scope();
    const Variable* found = scope.FindVar(kFoundInfVar);
    if (found == nullptr || !found->HasValue() ||
        ScalarOf(found->GetTensor()) == 0)
      return false;
    ++skipped;
    const Variable* scale = scope.FindVar(kLossScalingVar);
    log << "rank " << rank << ": the fp16 gradients overflowed; the update "
        << "was skipped, loss scaling now "
        << (scale != nullptr ? ScalarOf(scale->GetTensor()) : 0.0) << " ("
        << skipped << " step(s) skipped)\n";
    return true;
  }

  // Whether fp16 gradient merge's run just made only accumulated (its
  // counter is not back at 0): an overflow in it is no error, as the
  // merged step it belongs to is skipped (and reported) when it closes.
  bool OverflowInAMicroStep() const {
    if (job.main().mixed_precision() != "fp16") return false;
    const Variable* count = main->scope()->FindVar(kGradMergeStepVar);
    return count != nullptr && count->HasValue() &&
           ScalarOf(count->GetTensor()) != 0;
  }

  int64_t RunEpoch(int epoch, int64_t start_sample, int64_t* step,
                   TrainerResult* result) {
    std::vector<std::string> fetch = {job.loss_name()};
    for (const auto& m : job.metric_names()) fetch.push_back(m);
    std::vector<Tensor> batch;
    std::vector<Tensor> fetched;
    FeedList feeds = JobFeeds(job);
    const int64_t steps_per_epoch = batcher->StepsPerEpoch();
    batcher->StartEpoch(epoch, start_sample);
    const int64_t first_step = steps_per_epoch - batcher->StepsThisEpoch();
    auto epoch_start = Clock::now();
    double loss_sum = 0, acc_sum = 0;
    int64_t seen = 0, epoch_step = first_step;
    while (NextBatch(&batch)) {
      SetFeeds(batch, &feeds);
      if (slow_step_s > 0)
        std::this_thread::sleep_for(std::chrono::duration<double>(slow_step_s));
      if (dist) {
        dist->communicator()->BeginStep();
      } else if (Timeline* timeline = CurrentTimeline()) {
        timeline->SetStep(*step + 1);  // one process numbers its own steps
      }
      exe->Run(main, feeds, fetch, &fetched);
      double loss = ScalarOf(fetched[0]);
      if (SkippedByLossScaling() ||
          (!std::isfinite(loss) && OverflowInAMicroStep())) {
        ++*step;
        ++epoch_step;
        continue;
      }
      FLUID_ENFORCE_CODE(std::isfinite(loss), ErrorCode::kAborted, "loss is ",
                         loss, " at epoch ", epoch + 1, " step ",
                         epoch_step + 1, " on rank ", rank,
                         ": training diverged");
      trend.Add(loss);
      meter->AfterStep(log);
      int64_t n = batch[0].shape()[0];
      loss_sum += loss * n;
      if (fetched.size() > 1) acc_sum += ScalarOf(fetched[1]) * n;
      seen += n;
      ++epoch_step;
      ++*step;
      if (dist && o.check_consistency > 0 && *step % o.check_consistency == 0)
        dist->CheckConsistency();
      bool last = epoch_step == steps_per_epoch;
      if (last || (o.log_every > 0 && epoch_step % o.log_every == 0)) {
        const double el = Seconds(epoch_start, Clock::now());
        const double per_step = el / (epoch_step - first_step);
        LogProgress(epoch, epoch_step, steps_per_epoch, loss_sum / seen,
                    acc_sum / seen, seen * world / std::max(el, 1e-9),
                    per_step);
      }
      if (!last && o.checkpoint_every > 0 && *step % o.checkpoint_every == 0)
        saver->Save(*step, epoch, batcher->EpochPosition());
      KillForTestIfAsked(*step, rank);
    }
    result->final_loss = loss_sum / std::max<int64_t>(seen, 1);
    result->train_accuracy = acc_sum / std::max<int64_t>(seen, 1);
    return seen * world;
  }

  // Trains from `pos` to the last epoch, checkpointing after each; the
  // steps taken (counted from the run's first), samples/s and wire bytes
  // go to `result`.
  void RunEpochs(const Position& pos, TrainerResult* result) {
    const int start_epoch = static_cast<int>(pos.epoch);
    int64_t step = pos.step;
    const auto start = Clock::now();
    int64_t samples = 0;
    for (int epoch = start_epoch; epoch < o.epochs; ++epoch) {
      const int64_t start_sample = epoch == start_epoch ? pos.epoch_samples : 0;
      samples += RunEpoch(epoch, start_sample, &step, result);
      saver->Save(step, epoch + 1, 0);
    }
    // The clock stops when the last step's parameter gathers are done.
    if (dist != nullptr) dist->WaitParameterGathers();
    result->steps = step;
    result->samples_per_second =
        samples / std::max(Seconds(start, Clock::now()), 1e-9);
    if (dist != nullptr)
      result->allreduce_wire_bytes =
          dist->communicator()->allreduce_wire_bytes();
  }

  // The batcher's next batch; a data span of the timeline.
  bool NextBatch(std::vector<Tensor>* batch) {
    TimelineScope span(TimelineTrack::kData, "load batch");
    const bool more = batcher->Next(batch);
    if (span.active()) {
      int64_t bytes = 0;
      for (const Tensor& t : *batch) bytes += static_cast<int64_t>(t.bytes());
      span.set_bytes(more ? bytes : 0);
    }
    return more;
  }

  // One progress line (rank 0 speaks; the others' `log` is muted).
  void LogProgress(int epoch, int64_t epoch_step, int64_t steps_per_epoch,
                   double loss, double accuracy, double rate, double per_step) {
    const double remaining =
        (steps_per_epoch - epoch_step) * per_step +
        (o.epochs - epoch - 1) * steps_per_epoch * per_step;
    // A language model's metric is its loss: show its perplexity.
    const bool lm = IsLanguageModelJob(job);
    char line[256];
    std::snprintf(line, sizeof(line),
                  "epoch %d/%d  step %lld/%lld  loss %.4f  %s "
                  "%.4f  %.0f samples/s  ETA %s",
                  epoch + 1, o.epochs, static_cast<long long>(epoch_step),
                  static_cast<long long>(steps_per_epoch), loss,
                  lm ? "perplexity" : "accuracy",
                  lm ? std::exp(loss) : accuracy, rate,
                  FormatDuration(remaining).c_str());
    log << line << "\n";
    log.flush();
  }
};

// What runs the job: a plain executor, or one rank's MPIExecutor.
struct Execution {
  std::unique_ptr<Executor> local;
  std::unique_ptr<MPIExecutor> dist;
  std::unique_ptr<PreparedProgram> local_main;
  Executor* exe = nullptr;
  PreparedProgram* main = nullptr;
};

// The run settings that decide which collectives a rank issues (see
// CheckRunSettingsAgree), in the order a mismatch is reported: what the
// user set first, what follows from it last.
// The data's sizes come first, then what it is (DataSettings: a rank that
// read other data of the same size would train on other labels or ids).
std::vector<RunSetting> CollectiveSettings(
    const TrainerOptions& o, const proto::DistributedStrategy& strategy,
    const Dataset& train, const Dataset& test, const DataDescription& described,
    int world) {
  // Ranks of one tensor-parallel group (and pipeline) read the same
  // samples.
  const int data_world = DataParallelWorld(strategy, world);
  const int64_t per_rank = (train.size() + data_world - 1) / data_world;
  std::vector<RunSetting> data = DataSettings(described, train, test);
  std::vector<RunSetting> settings = {
      RunSetting::Int("--epochs", o.epochs),
      RunSetting::Int("--batch-size", o.batch_size),
      RunSetting::Int("--train-samples", o.train_samples),
      RunSetting::Int("--test-samples", o.test_samples),
      RunSetting::Int("--data (training samples)", train.size()),
      RunSetting::Int("--data (test samples)", test.size())};
  settings.insert(settings.end(), data.begin(), data.end());
  std::vector<RunSetting> rest = {
      RunSetting::Text("--seed", std::to_string(o.seed)),
      RunSetting::Int("--check-consistency", o.check_consistency),
      RunSetting::Flag("--resume", o.resume),
      RunSetting::Int("--checkpoint-every", o.checkpoint_every),
      RunSetting::Flag("--timeline", !o.timeline.empty()),
      RunSetting::Int("samples per rank", per_rank),
      RunSetting::Int("steps per epoch",
                      (per_rank + o.batch_size - 1) / o.batch_size),
  };
  settings.insert(settings.end(), rest.begin(), rest.end());
  // The strategy, field by field, each named by its flag where it has one.
  for (const auto& [path, value] : StrategyFields(strategy)) {
    const std::string flag = FlagOfField(path);
    settings.push_back(RunSetting::Text(
        flag.empty() ? "DistributedStrategy." + path
                     : flag + " (DistributedStrategy." + path + ")",
        value));
  }
  return settings;
}

// Makes the executor and runs the startup program, after refusing a launch
// that cannot train. Under mpirun, the ranks first check that they agree on
// every run setting that decides their collectives (before
// MPIExecutor::Init's program check, the first collective otherwise), then
// transpile and broadcast the parameters.
Execution SetUpExecution(const TrainerOptions& o, const Place& place,
                         const Dataset& train, const Dataset& test,
                         const DataDescription& described,
                         proto::TrainingJob* job, Scope* scope,
                         TrainerResult* result) {
  // A launch that cannot train as asked (srun with no PMI, more ranks on a
  // node than CPUs or GPUs allotted) is refused before MPI starts.
  RefuseBadLaunch(
      DetectLaunch(),
      place.is_cpu() ? 0 : (o.place == "cuda" ? CudaDeviceCount() : 1),
      "trainer");
  Execution run;
  if (!LaunchedByMpi()) {
    if (!o.timeline.empty()) StartTimeline(nullptr, o.timeline);
    run.local = std::make_unique<Executor>(place, o.threads);
    run.exe = run.local.get();
    // One process distributes nothing, but the local rewrites (mixed
    // precision, recompute, gradient merge) still apply.
    *job = LocalRewrites(*job, CanonicalStrategy(job->strategy()));
    run.exe->RunOnce(job->startup(), scope);
    run.local_main = run.exe->Prepare(job->main(), scope);
    run.main = run.local_main.get();
    return run;
  }
  run.dist = std::make_unique<MPIExecutor>(place, o.threads);
  FLUID_ENFORCE(o.stall_warn >= 0, "--stall-warn must be >= 0, got ",
                o.stall_warn);
  FLUID_ENFORCE(o.stall_timeout >= 0, "--stall-timeout must be >= 0, got ",
                o.stall_timeout);
  run.dist->communicator()->ConfigureStallWatchdog(
      StallConfig{o.stall_warn, o.stall_timeout});
  CheckRunSettingsAgree(run.dist->communicator(),
                        CollectiveSettings(o, job->strategy(), train, test,
                                           described, run.dist->world_size()));
  if (!o.timeline.empty()) StartTimeline(run.dist->communicator(), o.timeline);
  run.dist->Init(*job, scope, job->strategy());
  *job = run.dist->job();
  run.exe = run.dist->executor();
  run.main = run.dist->main_program();
  result->rank = run.dist->rank();
  result->world_size = run.dist->world_size();
  return run;
}

// The options that need no data or program to check.
void CheckOptions(const TrainerOptions& o) {
  FLUID_ENFORCE(o.program.empty() != o.model.empty(),
                "give exactly one of --program and --model");
  FLUID_ENFORCE(o.epochs >= 1, "--epochs must be >= 1, got ", o.epochs);
  FLUID_ENFORCE(o.batch_size >= 1, "--batch-size must be >= 1, got ",
                o.batch_size);
  FLUID_ENFORCE(o.threads >= 1, "--threads must be >= 1, got ", o.threads);
  FLUID_ENFORCE(!o.resume || !o.checkpoint_dir.empty(),
                "--resume needs --checkpoint-dir");
  FLUID_ENFORCE(!o.start_fresh || o.resume, "--start-fresh needs --resume");
  FLUID_ENFORCE(o.checkpoint_every >= 0,
                "--checkpoint-every must be >= 0, got ", o.checkpoint_every);
  FLUID_ENFORCE(o.check_consistency >= 0,
                "--check-consistency must be >= 0 (0: never), got ",
                o.check_consistency);
  FLUID_ENFORCE(o.checkpoint_every == 0 || !o.checkpoint_dir.empty(),
                "--checkpoint-every needs --checkpoint-dir");
  FLUID_ENFORCE(o.warmup_steps >= 0 && o.decay_steps >= 0,
                "--warmup-steps and --decay-steps must be >= 0, got ",
                o.warmup_steps, " and ", o.decay_steps);
}

// --print-strategy, --print-program and --save: show or write the job
// instead of training. True when one of them was asked for (and done).
bool PrintOrSave(const TrainerOptions& o, proto::TrainingJob job,
                 std::ostream& out) {
  if (o.print_strategy) {
    out << "# passes for more than one rank: ";
    const std::vector<std::string> passes = CollectivePassNames(job.strategy());
    for (size_t i = 0; i < passes.size(); ++i)
      out << (i ? ", " : "") << passes[i];
    out << "\n" << StrategyToText(CanonicalStrategy(job.strategy()));
    return true;
  }
  if (o.print_program) {
    if (o.print_nranks > 0)
      job = PrepareJob(job, job.strategy(), o.print_nranks);
    out << ProgramToString(job.main());
    return true;
  }
  if (!o.save.empty()) {
    SaveJob(job, o.save);
    out << "wrote " << o.model << " to " << o.save << "\n";
    return true;
  }
  return false;
}

// Test hook: FLUID_TEST_SLOW_STEP_RANK=R and FLUID_TEST_SLOW_STEP_SECONDS=S
// make rank R sleep S seconds before each step (a slow but progressing
// rank, which the stall watchdog must leave alone).
double SlowStepSeconds(int rank) {
  const char* r = std::getenv("FLUID_TEST_SLOW_STEP_RANK");
  const char* s = std::getenv("FLUID_TEST_SLOW_STEP_SECONDS");
  if (r == nullptr || s == nullptr || std::atoi(r) != rank) return 0;
  return std::max(0.0, std::atof(s));
}

// Where this rank writes its flight recorder when the job aborts:
// --flight-dir, else --checkpoint-dir, else the job's directory under
// $TMPDIR that the communicator chose when it started (DefaultFlightDir).
void SetFlightDir(const TrainerOptions& o, MPIExecutor* dist) {
  if (dist == nullptr) return;
  const std::string dir =
      o.flight_dir.empty() ? o.checkpoint_dir : o.flight_dir;
  if (dir.empty()) return;
  dist->communicator()->flight_recorder()->SetDumpPath(dir, dist->rank(),
                                                       dist->world_size());
}

}  // namespace

proto::ProgramDesc EvaluationProgram(const proto::TrainingJob& job,
                                     std::ostream& log) {
  if (job.has_test()) {
    CheckEvaluationProgram(job.test(), "the job's test program");
    return job.test();
  }
  proto::ProgramDesc test = CloneForTest(job.main());
  log << "the job has no test program: evaluating with the forward part of "
      << "the main program (" << test.blocks(0).ops_size() << " of "
      << job.main().blocks(0).ops_size() << " ops)\n";
  return test;
}

Place ParsePlace(const std::string& place) {
  if (place == "cpu") return Place::CPU();
  int device = -1;
  if (place == "cuda") {
    device = LocalRankDevice();
  } else if (place.rfind("cuda:", 0) == 0 && place.size() > 5 &&
             place.find_first_not_of("0123456789", 5) == std::string::npos &&
             place.size() < 14) {
    device = std::stoi(place.substr(5));
  } else {
    FLUID_THROW(ErrorCode::kInvalidArgument, "--place must be cpu, cuda or ",
                "cuda:N, got '", place, "'");
  }
  FLUID_ENFORCE_CODE(BuiltWithCuda(), ErrorCode::kUnimplemented, "--place ",
                     place, ": this build has no CUDA (configure with ",
                     "WITH_CUDA=ON)");
  const int count = CudaDeviceCount();
  FLUID_ENFORCE_CODE(count > 0, ErrorCode::kUnimplemented, "--place ", place,
                     ": no CUDA device is visible");
  FLUID_ENFORCE(device >= 0 && device < count, "--place ", place, ": ", count,
                " CUDA device(s) visible (0..", count - 1, ")");
  return Place::CUDA(device);
}

// Why a run is not evaluated ("" when it is).
std::string WhyNoEvaluation(const proto::TrainingJob& job, bool evaluate,
                            const DataDescription& described) {
  if (job.metric_names_size() == 0) return "the job names no metric";
  if (evaluate) return "";
  return described.empty_test.empty() ? "the test set is empty"
                                      : described.empty_test;
}

// Rank 0 after training: the test metric, in `result` and in the final
// line with the training speed (result's steps and samples/s).
void EvaluateAndReport(const proto::TrainingJob& job, const Dataset& test,
                       Executor* exe, PreparedProgram* eval,
                       TrainerResult* result, std::ostream& log) {
  int64_t seen = 0;
  const double metric = Evaluate(job, test, exe, eval, &seen);
  (IsLanguageModelJob(job) ? result->test_loss : result->test_accuracy) =
      metric;
  char line[320];
  std::snprintf(line, sizeof(line), "%s; trained %lld steps at %.0f samples/s",
                EvaluationLine(job, metric, seen, test).c_str(),
                static_cast<long long>(result->steps),
                result->samples_per_second);
  log << line;
  if (result->allreduce_wire_bytes > 0)
    log << "; allreduced " << result->allreduce_wire_bytes
        << " bytes of gradients per rank";
  log << "\n";
}

namespace {

// The job's data as the options cut it, checked against the job.
void LoadTrainerData(const TrainerOptions& o, const proto::TrainingJob& job,
                     Dataset* train, Dataset* test,
                     DataDescription* described) {
  LoadJobData(job, o.data_dir, o.data_dir == TrainerOptions().data_dir, train,
              test, described);
  if (o.train_samples > 0) *train = TakeFirst(*train, o.train_samples);
  if (o.test_samples > 0) *test = TakeFirst(*test, o.test_samples);
  CheckFeedsMatchData(job, *train);
  CheckJobTrains(job);
}

}  // namespace

TrainerResult RunTrainer(const TrainerOptions& asked, std::ostream& out) {
  if (!asked.predict.empty()) return Predict(asked, out);
  CheckOptions(asked);
  const Place place = ParsePlace(asked.place);
  proto::TrainingJob job = ObtainJob(asked);
  *job.mutable_strategy() =
      EffectiveStrategy(job, asked.strategy_file, asked.strategy);
  const TrainerOptions o = FitLayout(asked, &job, out);  // --layout auto
  TrainerResult result;
  if (PrintOrSave(o, job, out)) return result;
  if (PlanOrLimitMemory(o, job, out)) return result;
  Dataset train, test;
  DataDescription described;
  LoadTrainerData(o, job, &train, &test, &described);

  // One process, or one rank of many (started by mpirun).
  const int64_t memory_baseline = StartMemoryBaseline(place);
  Scope scope;
  Execution run =
      SetUpExecution(o, place, train, test, described, &job, &scope, &result);
  Executor* exe = run.exe;
  PreparedProgram* main = run.main;
  MPIExecutor* dist = run.dist.get();
  const int rank = result.rank, world = result.world_size;
  // The ranks that read their own samples (a group splitting the model).
  const int data_world = DataWorld(job, world);
  const int data_rank = DataParallelRank(job.strategy(), rank, world);
  CheckMicroBatches(o, job, dist);
  // Only rank 0 speaks.
  std::ostringstream muted;
  std::ostream& log = rank == 0 ? out : muted;
  // Rank 0 checkpoints and evaluates; what would fail there after training
  // is checked now, and a failure ends every rank (main aborts the job).
  std::unique_ptr<PreparedProgram> eval;  // rank 0's
  const bool evaluate = test.size() > 0 && job.metric_names_size() > 0;
  // Why no evaluation follows training: said up front and at the end.
  const std::string no_evaluation = WhyNoEvaluation(job, evaluate, described);
  if (rank == 0 && !o.checkpoint_dir.empty())
    CheckCheckpointDirWritable(o.checkpoint_dir);
  SetFlightDir(o, dist);
  Position pos;
  // What a checkpoint holds: the main program's persistable vars (for a
  // sharded optimizer, those of the unsharded program).
  const proto::ProgramDesc& saved =
      dist != nullptr ? dist->checkpoint_program() : job.main();
  if (o.resume) pos = Resume(o, saved, train.size(), &scope, dist, rank, log);
  const int64_t batch_size =
      ResumedBatchSize(pos, o.batch_size, data_world, log);
  CheckAndLogResumePoint(pos, train.size(), batch_size, data_world, log);
  std::vector<std::string> persistable = PersistableVars(saved);
  if (evaluate) eval = PrepareEvaluation(o, job, test, exe, &scope, dist, log);

  Batcher batcher(train, batch_size, o.seed, data_rank, data_world);
  LogBanner(o, job, train.size(), batch_size, batcher.StepsPerEpoch(), place,
            world, dist, log);
  LogStateBytes(job.main(), log);
  if (!evaluate) log << "nothing to evaluate: " << no_evaluation << "\n";

  MemoryMeter meter(place, memory_baseline, job.main(), batch_size, world,
                    main->eager_deletion());
  CheckpointSaver saver{
      o, scope, persistable, dist, rank, world, batch_size * data_world, log};
  SavedLayout(job, world,
              dist != nullptr ? dist->sharded_checkpoint_vars()
                              : std::vector<std::string>{},
              &saver);
  TrainLoop loop{o,
                 job,
                 exe,
                 main,
                 dist,
                 &batcher,
                 &saver,
                 rank,
                 data_world,
                 log,
                 SlowStepSeconds(rank),
                 LossTrend(),
                 &meter};
  loop.RunEpochs(pos, &result);

  // Rank 0 evaluates on the test set with the forward-only program (every
  // rank holds the same parameters, and now the same running statistics).
  if (evaluate) SyncForEvaluation(dist);
  const std::string trace =
      FinishTimeline(dist != nullptr ? dist->communicator() : nullptr);
  if (!trace.empty()) log << "timeline written to " << trace << "\n";
  if (!evaluate) {
    char line[96];
    std::snprintf(line, sizeof(line), "trained %lld steps at %.0f samples/s",
                  static_cast<long long>(result.steps),
                  result.samples_per_second);
    log << line << "; not evaluated: " << no_evaluation << "\n";
  }
  if (eval) EvaluateAndReport(job, test, exe, eval.get(), &result, log);
  // Last, so that a diverged run still leaves its checkpoint, timeline and
  // evaluation; its exit status says it failed.
  loop.trend.Check(rank);
  return result;
}

}  // namespace fluid
