#include "src/trainer/memory_report.h"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <vector>

#include "src/distributed/launcher.h"
#include "src/distributed/mpi_backend.h"
#include "src/framework/enforce.h"
#include "src/framework/memory.h"
#include "transpiler/distributed_job.h"
#include "transpiler/pipeline.h"
#include "transpiler/tensor_parallel.h"

namespace fluid {

int PlannedRanks(const TrainerOptions& o) {
  if (LaunchedByMpi()) return LauncherWorldSize();
  return o.print_nranks > 0 ? o.print_nranks : 1;
}

MemoryPlan PlanTrainerMemory(const TrainerOptions& o,
                             const proto::TrainingJob& job) {
  return PlanJobMemory(job, job.strategy(), PlannedRanks(o), o.batch_size);
}

void CheckMemoryLimit(const TrainerOptions& o, const MemoryPlan& plan) {
  if (o.memory_limit.empty()) return;
  const int64_t limit = ParseByteCount(o.memory_limit, "--memory-limit");
  FLUID_ENFORCE_CODE(plan.total <= limit, ErrorCode::kResourceExhausted,
                     "the job's memory plan needs ", FormatMiB(plan.total),
                     " per rank (", plan.nranks, " rank(s), batch ",
                     plan.batch_size, " per rank), over --memory-limit ",
                     o.memory_limit, " (", FormatMiB(limit),
                     "); the largest items: ", plan.LargestItems(3),
                     "; see trainer --plan-memory (a smaller --batch-size, "
                     "--shard-optimizer or more ranks shrink it)");
}

bool PlanOrLimitMemory(const TrainerOptions& o, const proto::TrainingJob& job,
                       std::ostream& out) {
  if (!o.plan_memory && o.memory_limit.empty()) return false;
  const MemoryPlan plan = PlanTrainerMemory(o, job);
  if (o.plan_memory && LauncherRank() == 0) out << plan.ToString();
  CheckMemoryLimit(o, plan);
  return o.plan_memory;
}

namespace {

struct Layout {
  int tp = 1, pp = 1;
};

// The micro-batches of a pipeline of `pp` stages: the user's, else 2 x pp
// (or pp) when the batch divides by it, else 1.
int MicroBatchesFor(const proto::DistributedStrategy& asked, int pp,
                    int64_t batch) {
  if (MicroBatches(asked) > 1) return MicroBatches(asked);
  for (int m : {2 * pp, pp})
    if (batch % m == 0) return m;
  return 1;
}

// The largest plan over the stages (each stage's first rank), or an error.
int64_t PlanLayout(const proto::TrainingJob& job,
                   const proto::DistributedStrategy& s, int nranks,
                   int64_t batch) {
  int64_t worst = 0;
  const int pp = PipelineStages(s);
  for (int stage = 0; stage < pp; ++stage) {
    const proto::TrainingJob prepared =
        PrepareJob(job, s, nranks, {}, stage * (nranks / pp));
    worst = std::max(worst,
                     PlanProgramMemory(prepared.main(), batch, nranks).total);
  }
  return worst;
}

// The layouts FitLayout tries, in its order: by the ranks k = tp x pp that
// split the model (1, 2, 4, ...), and for each k first the one with its
// stages across the hosts (pp = min(k, hosts)) and tensor parallelism
// inside them, then more stages, then fewer. Tensor-parallel groups stay
// inside a host (tp divides its ranks).
std::vector<Layout> Candidates(int nranks, int local) {
  const int hosts = std::max(1, nranks / local);
  std::vector<Layout> out;
  for (int k = 1; k <= nranks; k *= 2) {
    if (nranks % k != 0) continue;
    std::vector<Layout> split;
    for (int p = k; p >= 1; p /= 2)
      if (local % (k / p) == 0) split.push_back({k / p, p});
    std::stable_partition(split.begin(), split.end(), [&](const Layout& l) {
      return l.pp == std::min(k, hosts);
    });
    out.insert(out.end(), split.begin(), split.end());
  }
  return out;
}

std::string Describe(const Layout& l, int nranks) {
  std::ostringstream os;
  os << "tp " << l.tp << " x pp " << l.pp << " x dp " << nranks / (l.tp * l.pp);
  return os.str();
}

}  // namespace

TrainerOptions FitLayout(const TrainerOptions& o, proto::TrainingJob* job,
                         std::ostream& out) {
  if (o.layout.empty()) return o;
  FLUID_ENFORCE(!o.memory_limit.empty(),
                "--layout auto chooses the layout that fits --memory-limit: "
                "give it (the bytes each rank may use, e.g. 512M)");
  proto::DistributedStrategy s = job->strategy();
  FLUID_ENFORCE(TensorParallelDegree(s) == 1 && PipelineStages(s) == 1,
                "--layout auto chooses --tp and --pp itself: give neither "
                "(the strategy sets tp ",
                TensorParallelDegree(s), ", pp ", PipelineStages(s), ")");
  const int64_t limit = ParseByteCount(o.memory_limit, "--memory-limit");
  const int nranks = PlannedRanks(o);
  const LaunchInfo launch = DetectLaunch();
  const bool told = launch.kind != LaunchInfo::Kind::kNone &&
                    launch.local_size > 0;  // else one host (--transpile-for)
  const int local = told ? std::min(launch.local_size, nranks) : nranks;
  std::ostringstream tried;
  for (const Layout& l : Candidates(nranks, local)) {
    // The global batch stays --batch-size x nranks: each data-parallel
    // group reads tp x pp rank's worth.
    const int64_t batch = o.batch_size * l.tp * l.pp;
    proto::DistributedStrategy c = s;
    c.set_tensor_parallel_degree(l.tp);
    c.set_pipeline_stages(l.pp);
    if (l.pp > 1)
      c.mutable_pipeline_configs()->set_micro_batches(
          MicroBatchesFor(s, l.pp, batch));
    tried << (tried.tellp() > 0 ? "; " : "") << Describe(l, nranks) << ": ";
    int64_t need = 0;
    try {
      need = PlanLayout(*job, c, nranks, batch);
    } catch (const Error& e) {
      tried << "not possible (" << e.what() << ")";
      continue;
    }
    tried << FormatMiB(need);
    if (need > limit) continue;
    *job->mutable_strategy() = c;
    if (LauncherRank() == 0)
      out << "layout: " << Describe(l, nranks) << ", batch " << batch
          << " per data-parallel group (" << local
          << " rank(s) per host) fits --memory-limit " << o.memory_limit
          << " per rank; tried " << tried.str() << "\n";
    TrainerOptions fitted = o;
    fitted.batch_size = batch;
    return fitted;
  }
  FLUID_THROW(ErrorCode::kResourceExhausted, "--layout auto: no layout of ",
              nranks, " rank(s) (", local, " per host) fits --memory-limit ",
              o.memory_limit, " (", FormatMiB(limit),
              ") per rank: ", tried.str(),
              "; more ranks, a smaller --batch-size or --shard-optimizer "
              "shrink it");
}

int64_t StartMemoryBaseline(const Place& place) {
  return GetMemoryUsage(place).in_use;
}

MemoryMeter::MemoryMeter(const Place& place, int64_t baseline,
                         const proto::ProgramDesc& main, int64_t batch_size,
                         int nranks, bool eager_deletion)
    : place_(place),
      baseline_(baseline),
      plan_(PlanProgramMemory(main, batch_size, nranks, eager_deletion)) {
  ResetPeakMemory(place);
}

void MemoryMeter::AfterStep(std::ostream& log) {
  if (++steps_ != kSteps) return;
  measured_ = GetMemoryUsage(place_).peak - baseline_;
  const double ratio =
      plan_.total > 0 ? static_cast<double>(measured_) / plan_.total : 0;
  char r[32];
  std::snprintf(r, sizeof(r), "%.3f", ratio);
  log << "memory per rank: planned peak " << FormatMiB(plan_.total)
      << ", measured peak " << FormatMiB(measured_)
      << " (tensor memory over the first " << kSteps << " steps; measured/"
      << "planned " << r << ")\n";
  log.flush();
}

}  // namespace fluid
