// Each collective pass alone: what it writes, and its lint rejecting a job
// that breaks the pass's promise, with a message naming what is wrong.
#include <gtest/gtest.h>

#include <functional>

#include "src/framework/enforce.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/transpiler/testdata.h"
#include "transpiler/collective_transpiler.h"
#include "transpiler/passes/pass.h"

namespace fluid {

extern const Pass kBucketingPass, kAllReducePass, kCompressionPass,
    kSyncBatchNormPass, kStartupBroadcastPass;

namespace {

std::string LintError(const Pass& pass, const PassContext& ctx,
                      const proto::TrainingJob& job) {
  try {
    pass.lint(ctx, job);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The mlp job after the passes up to and including `last`.
struct Pipeline {
  proto::TrainingJob original = testing::LoadTestJob("mlp");
  proto::DistributedStrategy strategy;
  PassContext ctx{original, strategy, 2, {}};
  proto::TrainingJob job;

  void RunThrough(const std::vector<const Pass*>& passes) {
    job = original;
    for (const Pass* p : passes) p->run(&ctx, &job);
  }
};

TEST(BucketingPass, CoalescesEachBucketAndLintsIt) {
  Pipeline p;
  p.strategy.set_bucket_bytes(600 * 1024);
  p.RunThrough({&kBucketingPass});
  ASSERT_GT(p.ctx.buckets.size(), 1u);
  const auto& ops = p.job.main().blocks(0).ops();
  for (size_t k = 0; k < p.ctx.buckets.size(); ++k)
    EXPECT_EQ(ops[static_cast<int>(k)].type(), "coalesce_tensor");
  EXPECT_EQ(LintError(kBucketingPass, p.ctx, p.job), "");
  proto::OpDesc* first =
      p.job.mutable_main()->mutable_blocks(0)->mutable_ops(0);
  for (auto& slot : *first->mutable_outputs())
    if (slot.parameter() == "Output") slot.mutable_arguments()->RemoveLast();
  EXPECT_NE(LintError(kBucketingPass, p.ctx, p.job)
                .find("is not made of its gradients"),
            std::string::npos);
}

TEST(AllReducePass, ReducesEveryGradientOnceAndLintsIt) {
  Pipeline p;
  p.RunThrough({&kBucketingPass, &kAllReducePass});
  EXPECT_EQ(LintError(kAllReducePass, p.ctx, p.job), "");
  auto* ops = p.job.mutable_main()->mutable_blocks(0)->mutable_ops();
  for (int i = 0; i < ops->size(); ++i)
    if (ops->Get(i).type() == "c_allreduce") {
      ops->erase(ops->begin() + i);
      break;
    }
  EXPECT_NE(LintError(kAllReducePass, p.ctx, p.job).find("is never allreduced"),
            std::string::npos);
}

TEST(CompressionPass, MarksFloatBucketsAndLintsThem) {
  Pipeline p;
  p.strategy.set_grad_compression("bf16");
  p.RunThrough({&kBucketingPass, &kAllReducePass, &kCompressionPass});
  int compressed = 0;
  for (const auto& op : p.job.main().blocks(0).ops())
    if (op.type() == "c_allreduce") {
      ++compressed;
      EXPECT_EQ(GetOpAttrAs<std::string>(op, "compression"), "bf16");
      EXPECT_EQ(op.attrs(0).name(), "compression");  // as a new op holds it
    }
  EXPECT_GT(compressed, 0);
  EXPECT_EQ(LintError(kCompressionPass, p.ctx, p.job), "");
  for (auto& op : *p.job.mutable_main()->mutable_blocks(0)->mutable_ops())
    if (op.type() == "c_allreduce")
      SetOpAttr(&op, "compression", std::string("fp16"));
  EXPECT_NE(LintError(kCompressionPass, p.ctx, p.job)
                .find("travels as fp16 but the strategy's grad_compression is "
                      "bf16"),
            std::string::npos);
}

TEST(SyncBatchNormPass, SetsSyncStatsAndLintsIt) {
  Pipeline p;
  proto::BlockDesc* block = p.original.mutable_main()->mutable_blocks(0);
  *block->add_ops() = MakeOp("batch_norm", {}, {}, {});
  *block->add_ops() = MakeOp("batch_norm_grad", {}, {}, {});
  p.RunThrough({&kSyncBatchNormPass});
  EXPECT_EQ(LintError(kSyncBatchNormPass, p.ctx, p.job), "");
  auto* ops = p.job.mutable_main()->mutable_blocks(0)->mutable_ops();
  SetOpAttr(&(*ops)[ops->size() - 1], "sync_stats", false);
  EXPECT_NE(
      LintError(kSyncBatchNormPass, p.ctx, p.job).find("batch_norm_grad op #"),
      std::string::npos);
}

TEST(StartupBroadcastPass, BroadcastsEachPersistableOnceFromRankZero) {
  Pipeline p;
  p.RunThrough({&kStartupBroadcastPass});
  EXPECT_EQ(LintError(kStartupBroadcastPass, p.ctx, p.job), "");
  auto* ops = p.job.mutable_startup()->mutable_blocks(0)->mutable_ops();
  int last = ops->size() - 1;
  ASSERT_EQ(ops->Get(last).type(), "c_broadcast");
  proto::TrainingJob rooted = p.job;
  SetOpAttr(rooted.mutable_startup()->mutable_blocks(0)->mutable_ops(last),
            "root", int32_t{1});
  EXPECT_NE(LintError(kStartupBroadcastPass, p.ctx, rooted).find("from rank 1"),
            std::string::npos);
  const std::string var = OpInput(ops->Get(last), "X")[0];
  ops->RemoveLast();
  EXPECT_NE(LintError(kStartupBroadcastPass, p.ctx, p.job)
                .find("broadcasts '" + var + "' 0 times"),
            std::string::npos);
}

}  // namespace
}  // namespace fluid
