// The trainer's memory lines: --plan-memory, --memory-limit, and the line
// comparing the planned peak with the measured one.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "proto/framework.pb.h"
#include "src/framework/types.h"
#include "src/trainer/trainer.h"
#include "transpiler/memory_plan.h"

namespace fluid {

// The ranks a plan is made for: mpirun's world size when launched by it,
// else --transpile-for N when given, else 1.
int PlannedRanks(const TrainerOptions& o);

// The plan of the job as the run will prepare it (its strategy set
// already), for PlannedRanks ranks at --batch-size per rank.
MemoryPlan PlanTrainerMemory(const TrainerOptions& o,
                             const proto::TrainingJob& job);

// --memory-limit: an error when the plan's total exceeds it, naming the
// largest items.
void CheckMemoryLimit(const TrainerOptions& o, const MemoryPlan& plan);

// Before any data is read or any rank starts: --plan-memory prints the plan
// (rank 0 only under mpirun), --memory-limit refuses a job over it. True
// when the run stops here (--plan-memory).
bool PlanOrLimitMemory(const TrainerOptions& o, const proto::TrainingJob& job,
                       std::ostream& out);

// --layout auto (without it: `o` as it is): sets the job's
// tensor_parallel_degree and pipeline_stages (with micro-batches) to the
// first layout whose plan fits --memory-limit, and returns `o` with the
// batch of each data-parallel group (--batch-size x tp x pp: the global
// batch stays that of data parallelism over every rank, so the layout does
// not change what is trained). The layouts are tried by the ranks k = tp x
// pp that split the model (1, 2, 4, ...), for each k first with its
// pipeline stages across the hosts and tensor parallelism inside them
// (benchmarks/layout_table.sh measured this order fastest on 2 hosts).
// Prints the choice and what each layout tried needs (rank 0); an error
// listing them when none fits. The ranks per host are the launcher's (all
// on one host when it does not say).
TrainerOptions FitLayout(const TrainerOptions& o, proto::TrainingJob* job,
                         std::ostream& out);

// Measures the memory a run's steps hold at `place` against the plan of
// `main` (the program the rank runs): made just before the first step (it
// restarts the allocator's high-water mark), given the bytes in use before
// the job's startup program ran (StartMemoryBaseline: the data set and
// whatever else is outside the job); after kSteps steps it prints one line
// with the planned and the measured peak (the high-water mark, less the
// baseline). Not thread-safe.
class MemoryMeter {
 public:
  static constexpr int64_t kSteps = 3;

  MemoryMeter(const Place& place, int64_t baseline,
              const proto::ProgramDesc& main, int64_t batch_size, int nranks,
              bool eager_deletion);
  // Called after each step; prints the line once, after kSteps steps.
  void AfterStep(std::ostream& log);
  const MemoryPlan& plan() const { return plan_; }
  int64_t measured() const { return measured_; }

 private:
  Place place_;
  int64_t baseline_;
  MemoryPlan plan_;
  int64_t steps_ = 0;
  int64_t measured_ = -1;
};

// The bytes in use at `place` now.
int64_t StartMemoryBaseline(const Place& place);

}  // namespace fluid
