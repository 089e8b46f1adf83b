// The rewrites of a training job that change what one rank computes, not
// how ranks talk: mixed precision, recompute and gradient merge. They run
// in this order on the plain (local) job, before the collective passes
// (CollectiveTranspile) or, in one process, before the executor sees it
// (the trainer, fluid.Executor), so that a job means the same at any
// number of ranks.
#pragma once

#include "proto/distributed_strategy.pb.h"
#include "proto/framework.pb.h"

namespace fluid {

// `strategy` is canonical (CanonicalStrategy). Returns `job` with every
// local rewrite the strategy asks for applied, each linted.
proto::TrainingJob LocalRewrites(const proto::TrainingJob& job,
                                 const proto::DistributedStrategy& strategy);

}  // namespace fluid
