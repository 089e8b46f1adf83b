// A pass of the collective rewrite (transpiler/collective_transpiler.cc
// runs them in order): a program-to-program function that reads the
// strategy and the bucket plan and rewrites the job in place, and the lint
// that checks, on the finished job, what the pass promises.
//
// A new pass is one file here defining a `const Pass`, and one line in the
// pipeline (CollectivePasses in collective_transpiler.cc).
#pragma once

#include <vector>

#include "proto/distributed_strategy.pb.h"
#include "proto/framework.pb.h"
#include "transpiler/buckets.h"

namespace fluid {

struct PassContext {
  // The job as given (local, untouched) and the validated strategy.
  const proto::TrainingJob& original;
  const proto::DistributedStrategy& strategy;
  int nranks = 1;
  // The gradient buckets, dense then sparse: planned by the bucketing pass,
  // read by those after it.
  std::vector<GradBucket> buckets;
};

struct Pass {
  const char* name;
  // Whether the strategy asks for this pass.
  bool (*applies)(const proto::DistributedStrategy& strategy);
  void (*run)(PassContext* ctx, proto::TrainingJob* job);
  // Throws naming what the finished job breaks of the pass's promise.
  void (*lint)(const PassContext& ctx, const proto::TrainingJob& job);
};

// For Pass::applies: a pass every collective job runs.
inline bool Always(const proto::DistributedStrategy&) { return true; }

}  // namespace fluid
