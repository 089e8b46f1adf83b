// The memory plan: what one rank of a job will hold, before it runs.
//
// From the program a rank runs (the job as PrepareJob or LocalRewrites
// leaves it for `nranks` ranks and the strategy) and the batch size per
// rank, the plan counts the bytes of every tensor the executor allocates:
//   - state (persistable vars, held for the whole run): parameters,
//     optimizer state (what the update ops read besides parameter,
//     gradient and learning rate) and the rest (learning rate, counters,
//     batch norm statistics, loss scaling);
//   - communication buffers: the gradient buckets coalesce_tensor lays out
//     (kept from step to step; the gradients in them are views);
//   - the peak of the temporaries: the executor's eager deletion replayed
//     over the block's op order (src/framework/liveness.h: each temporary
//     is allocated by the first op that writes it and released after its
//     last use), split into the gradients and the activations live at the
//     peak. Fed vars and temporaries never released count from the start;
//     what a delete_var op frees lives from each write to that op.
// A dimension of -1 in a declared shape is the batch: it counts as
// `batch_size`. Memory the kernels allocate for themselves inside one op
// (workspaces) is not in the plan. Views (shard_view, the tensors of a
// coalesced buffer) hold no bytes of their own.
//
// Because the plan reads only the program, it follows whatever the rewrites
// put there (sharding, recompute, gradient merge, mixed precision) with no
// knowledge of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/distributed_strategy.pb.h"
#include "proto/framework.pb.h"

namespace fluid {

struct MemoryItem {
  std::string name;
  // "parameter", "optimizer state", "state", "communication buffer",
  // "gradient", "activation".
  std::string kind;
  int64_t bytes = 0;
};

struct MemoryPlan {
  int nranks = 1;
  int64_t batch_size = 0;
  int64_t parameters = 0;
  int64_t optimizer_state = 0;
  int64_t other_state = 0;
  int64_t communication = 0;
  // The temporaries live at the peak, split by kind.
  int64_t gradients = 0;
  int64_t activations = 0;
  // Where the peak of the temporaries is: the op index and type.
  int peak_op = -1;
  std::string peak_op_type;
  int64_t total = 0;  // the sum of the six above
  // The largest items counted in total, largest first (at most 8).
  std::vector<MemoryItem> largest;

  // Several lines: each category in MiB, the peak op, the largest items.
  std::string ToString() const;
  // "a (kind) 12.00 MiB, b (kind) 3.00 MiB, ..." of the first `n` items.
  std::string LargestItems(size_t n = 3) const;
};

// The plan of `main`, a program as one rank runs it (transpiled already),
// with `batch_size` samples per rank. `nranks` is only recorded. With
// `eager_deletion` false (an executor that keeps its temporaries), every
// temporary counts from the start.
MemoryPlan PlanProgramMemory(const proto::ProgramDesc& main, int64_t batch_size,
                             int nranks = 1, bool eager_deletion = true);

// The plan of `job` run on `nranks` ranks with `strategy` (the fields it
// sets override the job's own, as at run time): the job is prepared as the
// trainer and MPIExecutor prepare it (LocalRewrites on one rank,
// PrepareJob on more), then PlanProgramMemory.
MemoryPlan PlanJobMemory(const proto::TrainingJob& job,
                         const proto::DistributedStrategy& strategy, int nranks,
                         int64_t batch_size);

// Parses a byte count: digits with an optional K, M or G suffix (powers of
// 1024; "512M", "2G", "1048576"). `what` names the option in errors.
int64_t ParseByteCount(const std::string& text, const std::string& what);

// "12.34 MiB".
std::string FormatMiB(int64_t bytes);

}  // namespace fluid
