// Gradient merge on N ranks: the collectives the passes before this one
// inserted for the gradients (their allreduce or reduce-scatter and waits,
// a sharded optimizer's norms and parameter all-gathers) run on merged
// steps only, skipping on the flag gradient_merge_step writes, as the
// optimize ops already do (transpiler/gradient_merge.h has the rewrite).
// The flag comes from a persistable counter that every rank advances alike
// from the same start (broadcast, or loaded from one checkpoint), so every
// rank skips the same collectives: the sequence of collectives, which the
// collective check and the flight recorder number, is the same on all.
// Runs last; a job without gradient merge is left alone.
#include "transpiler/gradient_merge.h"

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/passes/pass.h"
#include "transpiler/program_query.h"

namespace fluid {

namespace {

// k_steps 1 leaves the job unrewritten, and Guard then changes nothing.
bool Asked(const proto::DistributedStrategy& s) { return s.gradient_merge(); }

void Guard(PassContext*, proto::TrainingJob* job) {
  if (GradientMergeSteps(job->main()) == 0) return;
  for (auto& op : *job->mutable_main()->mutable_blocks(0)->mutable_ops()) {
    if (HasOpAttr(op, kOpSkipIfAttr)) continue;
    const bool optimize =
        HasRole(op, OpRole::kOptimize) && op.type() != "gradient_merge_skip";
    if (optimize || IsDataCollective(op))
      SetOpAttr(&op, kOpSkipIfAttr, std::string(kGradMergeSkipVar));
  }
}

void Lint(const PassContext&, const proto::TrainingJob& job) {
  if (GradientMergeSteps(job.main()) != 0) LintGradientMerge(job.main());
}

}  // namespace

extern const Pass kGradientMergePass = {"gradient_merge", Asked, Guard, Lint};

}  // namespace fluid
