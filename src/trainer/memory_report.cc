#include "src/trainer/memory_report.h"

#include <cstdio>
#include <ostream>

#include "src/distributed/launcher.h"
#include "src/distributed/mpi_backend.h"
#include "src/framework/enforce.h"
#include "src/framework/memory.h"

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
