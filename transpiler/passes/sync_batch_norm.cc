// Sync batch norm: every batch_norm op and its gradient compute their
// statistics over the global batch (sync_stats; ops/batch_norm_op.cc
// allreduces the per-channel sums), so N ranks normalise as one process
// would over all N batches. The lint checks no batch norm was missed.
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/passes/pass.h"

namespace fluid {

namespace {

bool IsBatchNorm(const proto::OpDesc& op) {
  return op.type() == "batch_norm" || op.type() == "batch_norm_grad";
}

bool Asked(const proto::DistributedStrategy& s) { return s.sync_batch_norm(); }

void SyncStats(PassContext*, proto::TrainingJob* job) {
  for (auto& op : *job->mutable_main()->mutable_blocks(0)->mutable_ops())
    if (IsBatchNorm(op)) SetOpAttr(&op, "sync_stats", true);
}

void LintSyncStats(const PassContext&, const proto::TrainingJob& job) {
  const auto& ops = job.main().blocks(0).ops();
  for (int i = 0; i < ops.size(); ++i)
    FLUID_ENFORCE(
        !IsBatchNorm(ops[i]) || (HasOpAttr(ops[i], "sync_stats") &&
                                 GetOpAttrAs<bool>(ops[i], "sync_stats")),
        "the ", ops[i].type(), " op #", i,
        " normalises with its rank's statistics only, but the "
        "strategy asks for sync_batch_norm");
}

}  // namespace

extern const Pass kSyncBatchNormPass = {"sync_batch_norm", Asked, SyncStats,
                                        LintSyncStats};

}  // namespace fluid
