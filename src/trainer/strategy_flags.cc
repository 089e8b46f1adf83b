#include "src/trainer/strategy_flags.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "src/framework/enforce.h"
#include "transpiler/strategy.h"

namespace fluid {

namespace {

double ParsePositiveReal(const char* flag, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  FLUID_ENFORCE(!v.empty() && *end == '\0' && x > 0, flag,
                " takes a positive number, got ", Quote(v));
  return x;
}

void SetBucketMb(const std::string& v, proto::DistributedStrategy* s) {
  const double mb = ParsePositiveReal("--bucket-mb", v);
  s->set_bucket_bytes(static_cast<int64_t>(mb * (1 << 20)));
}

void SetNoOverlap(const std::string&, proto::DistributedStrategy* s) {
  s->set_overlap_allreduce(false);
}

void SetSyncBatchNorm(const std::string&, proto::DistributedStrategy* s) {
  s->set_sync_batch_norm(true);
}

// "--shard-optimizer": the default stage; 0: off; 1, 2 or 3: that stage.
void SetShardOptimizer(const std::string& v, proto::DistributedStrategy* s) {
  if (v.empty()) {
    s->set_sharding(true);
    return;
  }
  FLUID_ENFORCE(v == "0" || v == "1" || v == "2" || v == "3",
                "--shard-optimizer takes 0, 1, 2 or 3 (alone: stage ",
                proto::ShardingConfig().stage(), "), got ", Quote(v));
  s->set_sharding(v != "0");
  if (v != "0") SetStrategyField(s, "sharding_configs.stage", v);
}

void SetOverlapGather(const std::string&, proto::DistributedStrategy* s) {
  s->mutable_sharding_configs()->set_overlap_gather(true);
}

// "--amp bf16|fp16|none".
void SetAmp(const std::string& v, proto::DistributedStrategy* s) {
  FLUID_ENFORCE(v == "bf16" || v == "fp16" || v == "none",
                "--amp takes bf16, fp16 or none, got ", Quote(v));
  s->set_amp(v != "none");
  if (v != "none") s->mutable_amp_configs()->set_dtype(v);
}

// "--gradient-merge K": K micro-steps per optimizer step (1: plain).
void SetGradientMerge(const std::string& v, proto::DistributedStrategy* s) {
  char* end = nullptr;
  errno = 0;
  const long k = std::strtol(v.c_str(), &end, 10);
  FLUID_ENFORCE(!v.empty() && *end == '\0' && errno == 0 && k >= 1 &&
                    k <= std::numeric_limits<int32_t>::max(),
                "--gradient-merge takes a whole number of micro-steps per "
                "optimizer step, >= 1, got ",
                Quote(v));
  s->set_gradient_merge(true);
  s->mutable_gradient_merge_configs()->set_k_steps(static_cast<int32_t>(k));
}

// "--recompute": checkpoints chosen by auto; "--recompute a,b": those
// variables; "none": off.
void SetRecompute(const std::string& v, proto::DistributedStrategy* s) {
  s->set_recompute(v != "none");
  s->mutable_recompute_configs()->clear_checkpoints();
  if (v.empty() || v == "auto" || v == "none") return;
  SetStrategyField(s, "recompute_configs.checkpoints", v);
}

std::string ReadFile(const std::string& path, const char* flag);

// "--amp-lists FILE": lines "white: op op ..." and "black: op ...";
// blank lines and '#' comments are skipped.
void SetAmpLists(const std::string& v, proto::DistributedStrategy* s) {
  std::istringstream text(ReadFile(v, "--amp-lists"));
  proto::AmpConfig* c = s->mutable_amp_configs();
  c->clear_custom_white_list();
  c->clear_custom_black_list();
  std::string line;
  for (int n = 1; std::getline(text, line); ++n) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string list, op;
    if (!(words >> list)) continue;
    FLUID_ENFORCE(list == "white:" || list == "black:", "--amp-lists ",
                  Quote(v), " line ", n, ": expected \"white: op ...\" or ",
                  "\"black: op ...\", got ", Quote(line));
    while (words >> op) {
      if (list == "white:") {
        c->add_custom_white_list(op);
      } else {
        c->add_custom_black_list(op);
      }
    }
  }
}

template <const char* kPath>
void SetField(const std::string& v, proto::DistributedStrategy* s) {
  SetStrategyField(s, kPath, v);
}

constexpr char kAllreduceHierarchy[] = "allreduce_hierarchy";
constexpr char kGradCompression[] = "grad_compression";
constexpr char kSparseDenseRatio[] = "sparse_dense_ratio";
constexpr char kTensorParallelDegree[] = "tensor_parallel_degree";
constexpr char kPipelineStages[] = "pipeline_stages";
constexpr char kMicroBatches[] = "pipeline_configs.micro_batches";
constexpr char kSchedule[] = "pipeline_configs.schedule";
constexpr char kForwardsAhead[] = "pipeline_configs.forwards_ahead";

std::string ReadFile(const std::string& path, const char* flag) {
  std::ifstream in(path);
  FLUID_ENFORCE_CODE(in.good(), ErrorCode::kNotFound, flag, ": cannot read ",
                     Quote(path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The flags that split the model across ranks.
std::vector<StrategyFlag> ModelParallelFlags() {
  using Arg = StrategyFlag::Arg;
  return {
      {"--tp",
       {kTensorParallelDegree},
       "tensor parallelism: groups of N consecutive ranks split the paired "
       "fc layers' matrices (an MLP's, a transformer's attention by heads "
       "and feed-forward), each rank holding 1/N of them; the rank count "
       "must be a multiple of N (default 1: off)",
       Arg::kValue,
       SetField<kTensorParallelDegree>},
      {"--pp",
       {kPipelineStages},
       "pipeline parallelism: the model cut into N stages (by the ops' "
       "pipeline_stage attrs, else by parameter count), each run by "
       "nranks / N ranks, activations passed from stage to stage; the rank "
       "count must be a multiple of N (default 1: off)",
       Arg::kValue,
       SetField<kPipelineStages>},
      {"--micro-batches",
       {kMicroBatches},
       "with --pp: each batch cut into M micro-batches that fill the "
       "pipeline, gradients averaged over them (default 1)",
       Arg::kValue,
       SetField<kMicroBatches>},
      {"--schedule",
       {kSchedule},
       "with --pp: 1F1B (default: one forward, one backward, at most N "
       "micro-batches' activations held) or FThenB (every forward, then "
       "every backward)",
       Arg::kValue,
       SetField<kSchedule>},
      {"--forwards-ahead",
       {kForwardsAhead},
       "with --pp and 1F1B: N more forwards before each stage's first "
       "backward (but the last stage's), N more micro-batches' activations "
       "held, so that an op running long on one stage does not idle the "
       "next (default 0)",
       Arg::kValue,
       SetField<kForwardsAhead>},
  };
}

}  // namespace

const std::vector<StrategyFlag>& StrategyFlags() {
  using Arg = StrategyFlag::Arg;
  static const std::vector<StrategyFlag> flags = [] {
    std::vector<StrategyFlag> all = {
        {"--bucket-mb",
         {"bucket_bytes"},
         "gradient bucket size in MiB (default 4)",
         Arg::kValue,
         SetBucketMb},
        {"--no-overlap",
         {"overlap_allreduce"},
         "allreduce all buckets after the backward pass",
         Arg::kNone,
         SetNoOverlap},
        {"--allreduce",
         {kAllreduceHierarchy},
         "flat (default), hier (reduce within each host first, then between "
         "hosts) or auto (hier when ranks share hosts)",
         Arg::kValue,
         SetField<kAllreduceHierarchy>},
        {"--grad-compression",
         {kGradCompression},
         "none (default), bf16 or fp16: float32 gradients travel as 16-bit "
         "values, added in float32",
         Arg::kValue,
         SetField<kGradCompression>},
        {"--sync-batch-norm",
         {"sync_batch_norm"},
         "batch norm statistics over the global batch",
         Arg::kNone,
         SetSyncBatchNorm},
        {"--shard-optimizer",
         {"sharding", "sharding_configs.stage"},
         "each rank updates and stores 1/N of the optimizer state: 1 (ZeRO "
         "stage 1: after an allreduce), 2 (stage 2: after a reduce-scatter; "
         "the default when no value is given), 3 (stage 3: the parameters "
         "too, gathered where the step reads them) or 0 (off, the default)",
         Arg::kOptional,
         SetShardOptimizer},
        {"--shard-overlap-gather",
         {"sharding_configs.overlap_gather"},
         "with --shard-optimizer: wait for each step's parameter all-gather "
         "in the next step, just before the first op that reads the bucket, "
         "so that it overlaps the forward pass",
         Arg::kNone,
         SetOverlapGather},
        {"--sparse-dense-ratio",
         {kSparseDenseRatio},
         "sparse gradients are gathered unless all ranks' rows exceed this "
         "fraction of the table (default 0.25), then allreduced dense",
         Arg::kValue,
         SetField<kSparseDenseRatio>},
        {"--amp",
         {"amp", "amp_configs.dtype"},
         "mixed precision: bf16 or fp16 (the matrix ops and those between "
         "them in 16 bits, float32 master weights; fp16 with dynamic loss "
         "scaling), or none (the default)",
         Arg::kValue,
         SetAmp},
        {"--amp-lists",
         {"amp_configs.custom_white_list", "amp_configs.custom_black_list"},
         "with --amp: a file of op lists, lines \"white: op ...\" (run in 16 "
         "bits) and \"black: op ...\" (run in float32)",
         Arg::kValue,
         SetAmpLists},
        {"--gradient-merge",
         {"gradient_merge", "gradient_merge_configs.k_steps"},
         "K: run the optimizer (and the gradients' collectives) once every K "
         "batches, on their averaged gradients: batch K x --batch-size with "
         "the activation memory of one (default 1: every batch)",
         Arg::kValue,
         SetGradientMerge},
        {"--recompute",
         {"recompute", "recompute_configs.checkpoints"},
         "recompute activations in the backward pass from checkpoints: auto "
         "(alone: the outputs of residual adds and lstm/gru layers), a "
         "comma-separated list of variables, or none (the default)",
         Arg::kOptional,
         SetRecompute},
    };
    for (StrategyFlag& f : ModelParallelFlags()) all.push_back(std::move(f));
    return all;
  }();
  return flags;
}

std::string FlagOfField(const std::string& path) {
  for (const StrategyFlag& f : StrategyFlags())
    for (const std::string& field : f.fields)
      if (field == path) return f.flag;
  return "";
}

void ApplyStrategySet(const std::string& assignment,
                      proto::DistributedStrategy* s) {
  const size_t eq = assignment.find('=');
  FLUID_ENFORCE(eq != std::string::npos && eq > 0,
                "--strategy-set takes FIELD=VALUE (e.g. "
                "sharding_configs.stage=1), got ",
                Quote(assignment));
  SetStrategyField(s, assignment.substr(0, eq), assignment.substr(eq + 1));
}

proto::DistributedStrategy EffectiveStrategy(
    const proto::TrainingJob& job, const std::string& strategy_file,
    const proto::DistributedStrategy& asked) {
  proto::DistributedStrategy s = job.strategy();
  if (!strategy_file.empty())
    s.MergeFrom(
        StrategyFromText(ReadFile(strategy_file, "--strategy"), strategy_file));
  s.MergeFrom(asked);
  ValidateStrategy(s);
  return s;
}

}  // namespace fluid
