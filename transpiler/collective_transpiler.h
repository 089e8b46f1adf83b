// The collective transpiler: rewrites a training job so that N ranks, each
// running it on its own shard, average their gradients by allreduce right
// before the optimizer, with no parameter server. Pure functions on
// programs: no MPI, no kernels, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/distributed_strategy.pb.h"
#include "proto/framework.pb.h"
#include "transpiler/buckets.h"
#include "transpiler/program_query.h"

namespace fluid {

// Returns `job` rewritten for `nranks` ranks by the collective passes
// (transpiler/passes/) the strategy asks for, in this order:
//  - bucketing: gradients packed into buckets (coalesce_tensor: each
//    bucket's gradients become views of one buffer);
//  - allreduce: per bucket a reduction (c_allreduce average;
//    c_sparse_allreduce for a sparse gradient; c_reducescatter under
//    sharding stage 2) after the last backward op writing it (or before
//    the first optimize op without overlap_allreduce), and a c_wait before
//    the first op on the optimizer's side reading it (a gradient clip, a
//    weight decay or the update), so those all see the averaged gradient;
//  - compression, sync batch norm, startup_broadcast
//    (c_broadcast of every parameter and optimizer state from rank 0, so
//    all ranks start identical whatever their seeds), shard_updates
//    (sharding);
// then each pass's lint, and both programs stamped with nranks and their
// structure hash, the job with the strategy (canonical). The strategy is
// validated first (ValidateStrategy). The input job is not modified.
// With pipeline_stages, the program is cut into stages (after tensor
// parallelism, before the data-parallel passes, transpiler/pipeline.h),
// and the job returned is the one rank `rank`'s stage runs, its
// data-parallel passes over the ranks of that stage.
proto::TrainingJob CollectiveTranspile(
    const proto::TrainingJob& job, const proto::DistributedStrategy& strategy,
    int nranks, int rank = 0);

// The names of the passes CollectiveTranspile runs for `strategy`, in order.
std::vector<std::string> CollectivePassNames(
    const proto::DistributedStrategy& strategy);

// Checks a transpiled main program: every trainable gradient is reduced
// exactly once, after the last backward op writing it and before the first
// op on the optimizer's side reading it (its c_wait too), averaged exactly
// once (or never, when `average` is false), and compressed, if at all, to a
// known 16-bit format and only when float32. A violation is an error naming
// the gradient (and the op that reads it too early).
// The startup program with a c_broadcast from rank 0 of every persistable
// var appended (parameters and optimizer state), so that all ranks start
// identical whatever their seeds; unchanged when it already broadcasts.
proto::ProgramDesc StartupWithBroadcasts(const proto::ProgramDesc& startup);
bool HasStartupBroadcasts(const proto::ProgramDesc& startup);

void LintCollective(const proto::ProgramDesc& main, int nranks,
                    bool average = true);

// The running statistics (MeanOut, VarianceOut) of every batch_norm op of
// `main`, in program order, each once; then gradient merge's accumulators
// (per rank like them until averaged).
std::vector<std::string> RunningStatVars(const proto::ProgramDesc& main);

// The stat sync program of a collective job: an allreduce-average of every
// running statistic of `main` (RunningStatVars), in place. Without
// sync_stats each rank moves its running statistics toward its own
// batches'; running this before a checkpoint or an evaluation makes them
// identical on every rank (the average of the ranks' estimates). No ops
// when `main` has no batch_norm. Collective: every rank runs it.
proto::ProgramDesc StatSyncProgram(const proto::ProgramDesc& main);

// A hash of the program's structure (vars, ops, slots, attrs), ignoring the
// stamped hash itself and where each op was built (op_callstack). Ranks
// compare it before their first collective.
uint64_t StructureHash(const proto::ProgramDesc& program);

}  // namespace fluid
