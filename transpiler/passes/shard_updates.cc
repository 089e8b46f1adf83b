// Optimizer-state sharding (ZeRO stages 1 and 2): each bucket's update
// runs on this rank's shard only, then an all-gather rebuilds the whole
// parameters (transpiler/sharding.h has the rewrite and its lint).
#include "transpiler/passes/pass.h"
#include "transpiler/sharding.h"
#include "transpiler/strategy.h"

namespace fluid {

namespace {

bool Asked(const proto::DistributedStrategy& s) { return ShardStage(s) != 0; }

void Shard(PassContext* ctx, proto::TrainingJob* job) {
  ShardUpdates(ctx->original, ctx->buckets, ctx->strategy, ctx->nranks, job);
}

void Lint(const PassContext& ctx, const proto::TrainingJob& job) {
  LintSharded(job.main(), ctx.nranks);
}

}  // namespace

extern const Pass kShardUpdatesPass = {"shard_updates", Asked, Shard, Lint};

}  // namespace fluid
