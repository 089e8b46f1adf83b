#include "transpiler/local_rewrites.h"

#include "src/framework/enforce.h"
#include "transpiler/control_flow_lint.h"
#include "transpiler/gradient_merge.h"
#include "transpiler/mixed_precision.h"
#include "transpiler/pipeline.h"
#include "transpiler/recompute.h"
#include "transpiler/strategy.h"
#include "transpiler/tensor_parallel.h"

namespace fluid {

proto::TrainingJob LocalRewrites(const proto::TrainingJob& job,
                                 const proto::DistributedStrategy& strategy) {
  proto::TrainingJob out = job;
  if (strategy.gradient_merge()) {
    RefuseSubBlocks(job.main(), "gradient merge",
                    "train the loop without gradient_merge");
  }
  if (ShardStage(strategy) == 3)
    RefuseSubBlocks(job.main(), "sharding stage 3",
                    "shard the loop's job at stage 1 or 2");
  // Mixed precision first: the later rewrites, and the collective passes,
  // then see its float32 gradients and its unscaling among the optimizer's
  // ops.
  if (strategy.amp()) out = MixedPrecisionRewrite(out, strategy.amp_configs());
  if (strategy.recompute())
    out = RecomputeRewrite(out, strategy.recompute_configs());
  if (strategy.gradient_merge())
    out = GradientMergeRewrite(out, strategy.gradient_merge_configs());
  return out;
}

}  // namespace fluid
