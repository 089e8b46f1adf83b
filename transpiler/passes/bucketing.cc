// Bucketing: plans which gradients travel together (transpiler/buckets.h:
// grouped by update op and padded when the optimizer is sharded), declares
// each bucket's buffer and handle, and makes its gradients views of the
// buffer (one coalesce_tensor per dense bucket, at the start of the main
// program). Sparse gradients get a bucket each, reduced in place.
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/passes/pass.h"
#include "transpiler/program_query.h"
#include "transpiler/strategy.h"

namespace fluid {

namespace {

void PlanAndCoalesce(PassContext* ctx, proto::TrainingJob* job) {
  const proto::ProgramDesc& main = ctx->original.main();
  const int64_t bytes = ctx->strategy.bucket_bytes();
  const int stage = ShardStage(ctx->strategy);
  const int64_t small =
      stage == 3
          ? ctx->strategy.sharding_configs().param_persistence_threshold()
          : 0;
  ctx->buckets = stage != 0
                     ? PlanShardedBuckets(main, bytes, ctx->nranks, small)
                     : PlanBuckets(main, bytes);
  for (GradBucket& b : SparseGradBuckets(main))
    ctx->buckets.push_back(std::move(b));
  const proto::BlockDesc& src = main.blocks(0);
  proto::BlockDesc* dst = job->mutable_main()->mutable_blocks(0);
  google::protobuf::RepeatedPtrField<proto::OpDesc> ops;
  ops.Swap(dst->mutable_ops());
  for (const GradBucket& b : ctx->buckets) {
    const DataType dtype = VarDtype(GetVarDesc(src, b.grads[0]));
    if (b.sparse) {  // reduced in place: a handle, no buffer
      AddVarDesc(dst, b.handle, DataType::kInt64, Shape{})
          ->set_type(proto::VarDesc::COMM_HANDLE);
      continue;
    }
    AddVarDesc(
        dst, b.fused, dtype,
        Shape{b.bytes / static_cast<int64_t>(SizeOf(dtype)) + b.padding});
    AddVarDesc(dst, b.handle, DataType::kInt64, Shape{})
        ->set_type(proto::VarDesc::COMM_HANDLE);
    std::vector<std::string> views = b.grads;
    std::vector<int64_t> numels = b.numels;
    if (b.padding > 0) {  // zeros that make the buffer split evenly
      AddVarDesc(dst, b.pad, dtype, Shape{b.padding});
      views.push_back(b.pad);
      numels.push_back(b.padding);
    }
    *dst->add_ops() = WithRole(
        MakeOp("coalesce_tensor", {},
               {{"Output", views}, {"FusedOutput", {b.fused}}},
               {{"dtype", static_cast<int32_t>(dtype)}, {"numels", numels}}),
        OpRole::kCollective);
  }
  for (auto& op : ops) *dst->add_ops() = std::move(op);
}

// Every optimized gradient is in exactly one bucket; a dense bucket's
// coalesce_tensor makes exactly its gradients (and padding) views.
void LintBuckets(const PassContext& ctx, const proto::TrainingJob& job) {
  std::map<std::string, int> seen;
  for (const GradBucket& b : ctx.buckets)
    for (const auto& g : b.grads) ++seen[g];
  for (const auto& pg : OptimizedParams(ctx.original.main()))
    FLUID_ENFORCE(seen[pg.second] == 1, "gradient '", pg.second, "' is in ",
                  seen[pg.second], " buckets; it must be in one");
  std::map<std::string, std::vector<std::string>> views;
  for (const auto& op : job.main().blocks(0).ops())
    if (op.type() == "coalesce_tensor")
      views[OpOutput(op, "FusedOutput")[0]] = OpOutput(op, "Output");
  for (const GradBucket& b : ctx.buckets) {
    if (b.sparse) continue;
    std::vector<std::string> want = b.grads;
    if (b.padding > 0) want.push_back(b.pad);
    FLUID_ENFORCE(views[b.fused] == want, "bucket '", b.fused,
                  "' is not made of its gradients by one coalesce_tensor");
  }
}

}  // namespace

extern const Pass kBucketingPass = {"bucketing", Always, PlanAndCoalesce,
                                    LintBuckets};

}  // namespace fluid
