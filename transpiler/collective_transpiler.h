// The collective transpiler: rewrites a training job so that N ranks, each
// running it on its own shard, average their gradients by allreduce right
// before the optimizer, with no parameter server. Pure functions on
// programs: no MPI, no kernels, no I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "proto/framework.pb.h"

namespace fluid {

struct CollectiveConfig {
  int nranks = 1;
  int64_t bucket_bytes = 4 << 20;
  // Start each bucket's allreduce as soon as the backward pass has written
  // its last gradient (overlapping communication with the rest of the
  // backward pass), rather than all of them just before the optimizer.
  bool overlap = true;
  // Average (allreduce avg) rather than sum.
  bool average = true;
  // none | bf16 | fp16: float32 gradient buckets travel as 16-bit values
  // (c_allreduce's `compression`); other dtypes travel as they are.
  std::string grad_compression = "none";
  // Batch norm statistics over the global batch: sets sync_stats on every
  // batch_norm op and its gradient (ops/batch_norm_op.cc).
  bool sync_batch_norm = false;
  // Optimizer-state sharding (transpiler/shard_optimizer.h): 0 off; 1 each
  // rank updates and stores 1/nranks of every bucket after an allreduce;
  // 2 the same after a reduce-scatter, which hands each rank only its
  // shard of the averaged gradients.
  int shard_optimizer = 0;
  // Sharded optimizer only: each bucket's parameter all-gather, issued after
  // its update, is waited for in the next run, just before the first op
  // that reads one of its parameters (the next forward pass overlaps it),
  // rather than at the end of the step. Whatever reads the parameters
  // between runs must wait first (MPIExecutor::WaitParameterGathers).
  bool overlap_gather = false;
  // Sparse gradients (SELECTED_ROWS, an embedding's with is_sparse) are
  // gathered by c_sparse_allreduce, unless all ranks' rows together exceed
  // this fraction of the table's height at run time; then they are
  // allreduced as a dense table (src/distributed/sparse_allreduce.h).
  double sparse_dense_ratio = 0.25;
};

// One allreduce's worth of gradients, in the order the backward pass
// produces them.
struct GradBucket {
  std::vector<std::string> grads;
  std::vector<std::string> params;
  std::vector<int64_t> numels;  // element count of each grad
  std::string fused;            // the contiguous buffer the grads are views of
  std::string handle;           // the in-flight allreduce
  int64_t bytes = 0;
  // Elements after the gradients that make the buffer split into nranks
  // equal shards (sharded optimizer only), held by the var `pad`.
  int64_t padding = 0;
  std::string pad;
  // One sparse gradient (SELECTED_ROWS): reduced by c_sparse_allreduce in
  // place (`fused` is the gradient itself), never coalesced.
  bool sparse = false;
  // Sharded optimizer: the gradients are allreduced whole (as in stage 1)
  // because an op before the update reads each whole gradient (clipping
  // by a parameter's own norm).
  bool whole = false;
};

// The (param, grad) pairs the optimize ops update, from their op_role_var,
// in program order.
std::vector<std::pair<std::string, std::string>> OptimizedParams(
    const proto::ProgramDesc& main);

// Packs the dense gradients of `main` into buckets of at most
// `bucket_bytes` (a larger gradient gets a bucket of its own; dtypes never
// mix), in the order the backward pass writes them. Sparse gradients
// (SELECTED_ROWS) are left to SparseGradBuckets. `group`, when given, keeps
// parameters with different keys in different buckets (as dtypes always
// are).
std::vector<GradBucket> PlanBuckets(
    const proto::ProgramDesc& main, int64_t bucket_bytes,
    const std::function<std::string(const std::string& param)>& group = {});
// One bucket per sparse gradient of `main`, in program order.
std::vector<GradBucket> SparseGradBuckets(const proto::ProgramDesc& main);

// Returns the rewritten job:
//  - startup: c_broadcast of every parameter and optimizer state from rank
//    0, so all ranks start identical whatever their seeds;
//  - main: per bucket a coalesce_tensor (first op: the bucket's gradients
//    become views of one buffer), a c_allreduce (compressed as the config
//    says; c_sparse_allreduce for a sparse gradient) after the last
//    backward op
//    writing the bucket (overlap) or before the first optimize op, and a
//    c_wait before the first op on the optimizer's side reading it (a
//    gradient clip, a weight decay or the update: any op neither backward
//    nor collective), so those all see the averaged gradient;
//  - both programs stamped with nranks and their structure hash.
// The input job is not modified. The result passes LintCollective.
proto::TrainingJob CollectiveTranspile(const proto::TrainingJob& job,
                                       const CollectiveConfig& config);

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
// `main`, in program order, each once.
std::vector<std::string> RunningStatVars(const proto::ProgramDesc& main);

// The stat sync program of a collective job: an allreduce-average of every
// running statistic of `main` (RunningStatVars), in place. Without
// sync_stats each rank moves its running statistics toward its own
// batches'; running this before a checkpoint or an evaluation makes them
// identical on every rank (the average of the ranks' estimates). No ops
// when `main` has no batch_norm. Collective: every rank runs it.
proto::ProgramDesc StatSyncProgram(const proto::ProgramDesc& main);

// A hash of the program's structure (vars, ops, slots, attrs), ignoring the
// stamped hash itself. Ranks compare it before their first collective.
uint64_t StructureHash(const proto::ProgramDesc& program);

}  // namespace fluid
