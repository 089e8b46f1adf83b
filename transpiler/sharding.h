// Sharding as a rewrite of the collective program (ZeRO stages 1 to 3;
// stage 3, the parameters kept as shards, is transpiler/shard_params.h's
// part of it): the parameters of each gradient bucket become views of
// one buffer split into nranks equal shards; rank r updates only shard r,
// with optimizer state that exists only for that shard, and an all-gather
// of the shards gives every rank the whole updated buffer. Communication
// stays that of an allreduce (a reduce-scatter or an allreduce of the
// gradients, an all-gather of the parameters); optimizer memory and
// compute fall to 1/nranks.
//
// Per bucket k, in the main program:
//   coalesce_tensor   params -> fused_param_k        (at the start)
//   c_reducescatter   fused_grad_k -> fused_grad_k@SHARD        (stage 2)
//   | c_allreduce + shard_view fused_grad_k -> ...@SHARD        (stage 1)
//   c_wait
//   shard_view        fused_param_k -> fused_param_k@SHARD
//   <update>          the bucket's one update op, on the shards, its state
//                     vars fused_param_k@<Slot>@SHARD
//   c_allgather       fused_param_k@SHARD -> fused_param_k
//   c_wait            (at the end of the program)
//
// With overlapped gathers (ShardingConfig) the c_wait moves instead to just
// before the first op that reads one of the bucket's parameters, where it
// waits for the previous run's gather (idle_ok: the first run finds none);
// the gather's handle is then persistable, living across runs, and the
// gathers overlap the next forward pass in the order the buckets are
// needed.
//
// Buckets group parameters whose update ops agree on type, attributes and
// learning rate, so that one op can update the whole shard. Elementwise
// update rules only: an op whose state is shaped like its parameter, plus
// scalars (learning rate, Adam's beta powers: the bucket keeps its first
// parameter's). Ops that read a gradient between its reduction and the
// update (clipping, weight decay) run once per bucket on its shards, where
// they are elementwise (shard_gradient_ops.h); a global norm becomes the
// sum of the shards' partial norms and a scalar allreduce.
//
// A parameter whose gradient holds sparse rows (an embedding with
// is_sparse) is replicated, at every stage: it is in no parameter buffer,
// its gradient is averaged by its c_sparse_allreduce as without sharding,
// and its clipping, decay and update run whole on every rank (a step
// touches few rows; sharding the table by rows would need a row-owner
// lookup per id, and gathering it whole would cost more than it saves).
#pragma once

#include <string>
#include <vector>

#include "proto/distributed_strategy.pb.h"
#include "proto/framework.pb.h"
#include "transpiler/buckets.h"

namespace fluid {

// Rewrites the updates of `out` (CollectiveTranspile's result for `job`,
// with `buckets` reduced) into sharded updates, and its startup to create
// the shards' optimizer state instead of the parameters'.
void ShardUpdates(const proto::TrainingJob& job,
                  const std::vector<GradBucket>& buckets,
                  const proto::DistributedStrategy& strategy, int nranks,
                  proto::TrainingJob* out);

// Whether a main program's updates are sharded (it has shard views, or
// parameters kept as shards).
bool IsSharded(const proto::ProgramDesc& main);

// The startup ops of a sharded job that create shard state: for an
// executor whose scope was initialised by the job's unsharded startup.
proto::ProgramDesc ShardStateStartup(const proto::ProgramDesc& startup);
// Whether a startup op is one of those: it writes shard vars only, or it
// is one of the ops that shard a bucket's parameters (stage 3), which
// touch its buffer.
bool MakesShardState(const proto::OpDesc& op);

// Checkpoints of a sharded job hold what the unsharded job's would (the
// persistable vars of `original`'s main program), so that any run resumes
// from them, sharded or not, on any number of ranks:
//  - gather (collective: every rank runs it) all-gathers each shard state
//    into the per-parameter state vars of `original` (views of one full
//    buffer), and gives each parameter's scalar state (Adam's beta powers)
//    the value its bucket's update keeps;
//  - scatter (this rank alone) copies this rank's shard of the
//    per-parameter state vars, loaded from a checkpoint, into its shard
//    state.
// `original` is the job before CollectiveTranspile, `sharded` its result.
struct ShardCheckpointPlan {
  proto::ProgramDesc gather;
  // Stage 3: gather's part that fills the parameters only (for an
  // evaluation, which reads no optimizer state).
  proto::ProgramDesc gather_parameters;
  proto::ProgramDesc scatter;
  // The per-parameter state vars shaped like their parameters (what gather
  // fills and scatter reads); scalars stay where they are.
  std::vector<std::string> per_parameter_state;
};
ShardCheckpointPlan PlanShardCheckpoint(const proto::TrainingJob& original,
                                        const proto::TrainingJob& sharded);

// Checks a sharded main program: every trainable parameter belongs to
// exactly one parameter buffer; each buffer has one shard view, one update
// of that shard, after it one all-gather back into the buffer and a wait
// (after it, or overlapped: before every op that reads the buffer or its
// parameters, idle_ok, on a persistable handle);
// the update's gradient shard is reduced (averaged) once and waited for
// before the update. A violation is an error naming the buffer or the
// parameter.
void LintSharded(const proto::ProgramDesc& main, int nranks);

// The bytes one rank holds for training state, from a main program's
// declarations: parameters (every rank holds them all; under stage 3 the
// persistable shards instead of the sharded buckets' parameters),
// gradients (their vars, plus the gradient shards of a sharded program;
// stage 3's whole gradients live only from the backward pass to their
// reduce-scatter, and count there as transients, not here) and optimizer
// state (what the update ops read besides parameter, gradient and
// learning rate: a sharded program's shard state, each var once).
struct StateBytes {
  int64_t parameters = 0;
  int64_t gradients = 0;
  int64_t optimizer_state = 0;
};
StateBytes PerRankStateBytes(const proto::ProgramDesc& main);

}  // namespace fluid
