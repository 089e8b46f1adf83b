// The sharded-optimizer rewrite: its op sequence, its state, its lint; no
// MPI and no kernels.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/transpiler/testdata.h"
#include "transpiler/collective_transpiler.h"
#include "transpiler/sharding.h"

namespace fluid {
namespace {

std::vector<std::string> Types(const proto::ProgramDesc& p) {
  return testing::OpTypes(p);
}

proto::TrainingJob Sharded(int stage, int nranks = 4) {
  proto::DistributedStrategy cfg;
  cfg.set_sharding(stage != 0);
  if (stage != 0) cfg.mutable_sharding_configs()->set_stage(stage);
  return CollectiveTranspile(testing::LoadTestJob("mlp"), cfg, nranks);
}

int64_t Count(const std::vector<std::string>& v, const std::string& x) {
  return std::count(v.begin(), v.end(), x);
}

TEST(ShardOptimizer, OneUpdateOfTheShardBetweenAReduceScatterAndAGather) {
  proto::TrainingJob out = Sharded(2);
  const std::vector<std::string> t = Types(out.main());
  // The six momentum ops of the mlp share one bucket: one update.
  EXPECT_EQ(Count(t, "momentum"), 1);
  EXPECT_EQ(Count(t, "c_reducescatter"), 1);
  EXPECT_EQ(Count(t, "c_allreduce"), 0);
  EXPECT_EQ(std::vector<std::string>(t.end() - 5, t.end()),
            (std::vector<std::string>{"c_wait", "shard_view", "momentum",
                                      "c_allgather", "c_wait"}));
  // The parameters and the gradients each become one buffer, first.
  EXPECT_EQ(t[0], "coalesce_tensor");
  EXPECT_EQ(t[1], "coalesce_tensor");
  const proto::BlockDesc& main = out.main().blocks(0);
  const proto::OpDesc& update = main.ops(main.ops_size() - 3);
  EXPECT_EQ(OpInput(update, "Param"),
            std::vector<std::string>{"fused_param_0@COALESCED@SHARD"});
  EXPECT_EQ(OpInput(update, "Grad"),
            std::vector<std::string>{"fused_grad_0@COALESCED@SHARD"});
  EXPECT_EQ(OpInput(update, "Velocity"),
            std::vector<std::string>{"fused_param_0@COALESCED@Velocity@SHARD"});
}

TEST(ShardOptimizer, StateExistsForTheShardOnlyAndThePaddingEvensItOut) {
  proto::TrainingJob job = testing::LoadTestJob("mlp");
  int64_t total = 0;
  for (const auto& v : job.main().blocks(0).vars())
    if (v.trainable()) total += VarShape(v).numel();
  for (int nranks : {2, 3, 4}) {
    proto::TrainingJob out = Sharded(2, nranks);
    const int64_t padded = (total + nranks - 1) / nranks * nranks;
    for (const auto* block :
         {&out.main().blocks(0), &out.startup().blocks(0)}) {
      int64_t state = 0;
      for (const auto& v : block->vars()) {
        EXPECT_EQ(v.name().find("velocity"), std::string::npos)
            << "per-parameter state '" << v.name() << "' left";
        if (v.name().find("@Velocity@SHARD") != std::string::npos)
          state += VarShape(v).numel();
      }
      EXPECT_EQ(state, padded / nranks) << nranks << " ranks";
    }
    EXPECT_EQ(
        VarShape(GetVarDesc(out.main().blocks(0), "fused_param_0@COALESCED"))
            .numel(),
        padded);
    // No broadcast of the state: each rank's shard is its own.
    for (const auto& op : out.startup().blocks(0).ops()) {
      if (op.type() == "c_broadcast") {
        EXPECT_FALSE(IsShardVar(OpInput(op, "X")[0]));
      }
    }
  }
}

TEST(ShardOptimizer, StageOneViewsTheAllReducedGradient) {
  const std::vector<std::string> t = Types(Sharded(1).main());
  EXPECT_EQ(Count(t, "c_allreduce"), 1);
  EXPECT_EQ(Count(t, "c_reducescatter"), 0);
  EXPECT_EQ(Count(t, "shard_view"), 2);
}

// Removes the first op of `type` from the main program.
void DropFirst(proto::TrainingJob* job, const std::string& type) {
  auto* ops = job->mutable_main()->mutable_blocks(0)->mutable_ops();
  for (int i = 0; i < ops->size(); ++i)
    if (ops->Get(i).type() == type) {
      ops->DeleteSubrange(i, 1);
      return;
    }
}

void ExpectLintError(const proto::TrainingJob& job, const std::string& what) {
  try {
    LintSharded(job.main(), 4);
    FAIL() << "expected: " << what;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(ShardLint, RejectsAMissingGatherAndAParameterUpdatedTwice) {
  EXPECT_NO_THROW(LintSharded(Sharded(2).main(), 4));
  proto::TrainingJob no_gather = Sharded(2);
  DropFirst(&no_gather, "c_allgather");
  ExpectLintError(no_gather, "has 0 c_allgather op(s) reading");

  proto::TrainingJob twice = Sharded(2);
  auto* ops = twice.mutable_main()->mutable_blocks(0)->mutable_ops();
  for (int i = 0; i < ops->size(); ++i)
    if (ops->Get(i).type() == "momentum") {
      proto::OpDesc again = ops->Get(i);
      *ops->Add() = again;
      break;
    }
  ExpectLintError(twice, "has 2 update ops of its shard");

  proto::TrainingJob two_buffers = Sharded(2);
  auto* main = two_buffers.mutable_main()->mutable_blocks(0);
  proto::OpDesc copy = main->ops(0);  // the parameters' coalesce_tensor
  SetOpOutput(&copy, "FusedOutput", {"fused_param_9@COALESCED"});
  *main->add_ops() = copy;
  ExpectLintError(two_buffers, "is in two parameter buffers");

  proto::TrainingJob unreduced = Sharded(2);
  DropFirst(&unreduced, "c_reducescatter");
  ExpectLintError(unreduced, "is never reduced");
}

// Inserts `op` (optimize role) before the first momentum op of `job`.
void InsertBeforeUpdate(proto::TrainingJob* job, proto::OpDesc op) {
  SetOpAttr(&op, kOpRoleAttr, static_cast<int>(OpRole::kOptimize));
  auto* ops = job->mutable_main()->mutable_blocks(0)->mutable_ops();
  for (int i = 0; i < ops->size(); ++i)
    if (ops->Get(i).type() == "momentum") {
      *ops->Add() = op;
      for (int j = ops->size() - 1; j > i; --j) ops->SwapElements(j, j - 1);
      return;
    }
}

void ExpectShardError(const proto::TrainingJob& job, const std::string& what) {
  proto::DistributedStrategy cfg;
  cfg.set_sharding(true);
  cfg.mutable_sharding_configs()->set_stage(2);
  try {
    CollectiveTranspile(job, cfg, 2);
    ADD_FAILURE() << "no error, expected one saying " << what;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

// L2 decay and global-norm clipping run once per bucket, on its shards;
// the squared norms of the shards are summed over the ranks.
TEST(ShardOptimizer, ClipsAndDecaysTheShards) {
  for (int stage : {1, 2}) {
    proto::DistributedStrategy cfg;
    cfg.set_sharding(stage != 0);
    if (stage != 0) cfg.mutable_sharding_configs()->set_stage(stage);
    cfg.set_bucket_bytes(256 << 10);  // several buckets
    proto::TrainingJob out =
        CollectiveTranspile(testing::LoadTestJob("mlp_clip_decay"), cfg, 4);
    const std::vector<std::string> t = Types(out.main());
    const int64_t buckets = Count(t, "adam");
    EXPECT_GT(buckets, 1);
    EXPECT_EQ(Count(t, "squared_l2_norm"), buckets);
    EXPECT_EQ(Count(t, "elementwise_mul"), buckets);
    EXPECT_EQ(Count(t, "scale"), buckets);
    EXPECT_EQ(Count(t, "c_allreduce"), stage == 1 ? buckets + 1 : 1);
    const proto::BlockDesc& main = out.main().blocks(0);
    int norm_sum = -1;
    for (int i = 0; i < main.ops_size(); ++i) {
      const proto::OpDesc& op = main.ops(i);
      if (op.type() == "squared_l2_norm") {
        EXPECT_TRUE(IsShardVar(OpInput(op, "X")[0])) << OpInput(op, "X")[0];
      }
      if (op.type() == "elementwise_mul" || op.type() == "scale") {
        for (const auto& v : OpOutputNames(op)) EXPECT_TRUE(IsShardVar(v));
      }
      if (op.type() == "sum" && OpInput(op, "X").size() == size_t(buckets))
        norm_sum = i;
    }
    ASSERT_GE(norm_sum, 0);
    const proto::OpDesc& reduce = main.ops(norm_sum + 1);
    EXPECT_EQ(reduce.type(), "c_allreduce");
    EXPECT_EQ(OpInput(reduce, "X"), OpOutput(main.ops(norm_sum), "Out"));
    EXPECT_EQ(GetOpAttrAs<std::string>(reduce, "reduce_type"), "sum");
    // No per-parameter temporary is left behind.
    for (const auto& v : main.vars()) {
      if (v.name().find("@DECAY") != std::string::npos ||
          v.name().find("@SQUARED_NORM") != std::string::npos) {
        EXPECT_TRUE(IsShardVar(v.name())) << v.name();
      }
    }
  }
}

// Clipping by a parameter's own norm needs its whole gradient: that
// parameter's bucket is allreduced (then viewed, as in stage 1) and the
// clip runs as it is; the other buckets are reduce-scattered.
TEST(ShardOptimizer, ClipsByNormOnWholeGradients) {
  proto::TrainingJob job = testing::LoadTestJob("mlp");
  InsertBeforeUpdate(
      &job, MakeOp("clip_by_norm", {{"X", {"fc_0.w_0@GRAD"}}},
                   {{"Out", {"fc_0.w_0@GRAD"}}}, {{"max_norm", 1.0f}}));
  proto::DistributedStrategy cfg;
  cfg.set_sharding(true);
  cfg.mutable_sharding_configs()->set_stage(2);
  proto::TrainingJob out = CollectiveTranspile(job, cfg, 4);
  const std::vector<std::string> t = Types(out.main());
  EXPECT_EQ(Count(t, "c_allreduce"), 1);
  EXPECT_EQ(Count(t, "c_reducescatter"), 1);
  const proto::BlockDesc& main = out.main().blocks(0);
  std::string whole;  // the allreduced buffer
  int clip = -1, view = -1;
  for (int i = 0; i < main.ops_size(); ++i) {
    const proto::OpDesc& op = main.ops(i);
    if (op.type() == "c_allreduce") whole = OpInput(op, "X")[0];
    if (op.type() == "clip_by_norm") {
      clip = i;
      EXPECT_EQ(OpInput(op, "X"), std::vector<std::string>{"fc_0.w_0@GRAD"});
    }
    if (op.type() == "shard_view" && OpInput(op, "X")[0] == whole) view = i;
  }
  EXPECT_GE(clip, 0);
  EXPECT_GT(view, 0);  // the update reads the clipped buffer's shard
}

TEST(ShardOptimizer, RefusesNonElementwiseReadersWithAMessage) {
  proto::TrainingJob other = testing::LoadTestJob("mlp");
  InsertBeforeUpdate(&other, MakeOp("sqrt", {{"X", {"fc_0.w_0@GRAD"}}},
                                    {{"Out", {"fc_0.w_0@GRAD"}}}));
  ExpectShardError(other, "the sqrt op reads the gradient of 'fc_0.w_0'");
  proto::TrainingJob mixed = testing::LoadTestJob("mlp");
  InsertBeforeUpdate(
      &mixed, MakeOp("elementwise_add",
                     {{"X", {"fc_0.w_0@GRAD"}}, {"Y", {"fc_0.b_0@GRAD"}}},
                     {{"Out", {"fc_0.w_0@GRAD"}}}));
  ExpectShardError(mixed, "reads the gradients or parameters of 'fc_0.b_0'");
  proto::TrainingJob lars = testing::LoadTestJob("mlp");
  for (auto& op : *lars.mutable_main()->mutable_blocks(0)->mutable_ops())
    if (op.type() == "momentum") op.set_type("lars_momentum");
  ExpectShardError(lars, "the lars_momentum update of");
}

TEST(ShardOptimizer, RefusesStageThree) {
  proto::DistributedStrategy cfg;
  cfg.set_sharding(true);
  cfg.mutable_sharding_configs()->set_stage(3);
  EXPECT_THROW(CollectiveTranspile(testing::LoadTestJob("mlp"), cfg, 2), Error);
}

// Sharded with overlapped gathers, one bucket per parameter (so that the
// buckets are needed at different points of the forward pass).
proto::TrainingJob Overlapped(int stage) {
  proto::DistributedStrategy cfg;
  cfg.set_sharding(stage != 0);
  if (stage != 0) cfg.mutable_sharding_configs()->set_stage(stage);
  cfg.mutable_sharding_configs()->set_overlap_gather(true);
  cfg.set_bucket_bytes(1);
  return CollectiveTranspile(testing::LoadTestJob("mlp"), cfg, 4);
}

// Index of the first op of `block` from `from` on reading one of `vars`.
int FirstReaderOf(const proto::BlockDesc& block,
                  const std::set<std::string>& vars, int from = 0) {
  for (int i = from; i < block.ops_size(); ++i)
    for (const auto& n : OpInputNames(block.ops(i)))
      if (vars.count(n)) return i;
  return block.ops_size();
}

// Each bucket's parameters and buffer, by its gather's handle.
std::map<std::string, std::set<std::string>> GatheredByHandle(
    const proto::BlockDesc& block) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& op : block.ops()) {
    if (op.type() != "coalesce_tensor" ||
        OpOutput(op, "FusedOutput")[0].rfind("fused_param_", 0) != 0)
      continue;
    const std::string fused = OpOutput(op, "FusedOutput")[0];
    std::set<std::string>& vars = out[fused + "@HANDLE"];
    for (const auto& p : OpOutput(op, "Output")) vars.insert(p);
    vars.insert(fused);
  }
  return out;
}

TEST(ShardOptimizer, OverlappedGatherIsWaitedBeforeTheFirstReaderOfItsBucket) {
  for (int stage : {1, 2}) {
    const proto::TrainingJob out = Overlapped(stage);
    const proto::BlockDesc& main = out.main().blocks(0);
    const auto buckets = GatheredByHandle(main);
    ASSERT_GT(buckets.size(), 2u);
    std::vector<int> waits;
    for (const auto& [handle, vars] : buckets) {
      SCOPED_TRACE(handle);
      const proto::VarDesc& h = GetVarDesc(main, handle);
      EXPECT_TRUE(h.persistable());
      EXPECT_EQ(h.type(), proto::VarDesc::COMM_HANDLE);
      int wait = -1, gather = -1, waits_of_it = 0;
      for (int i = 0; i < main.ops_size(); ++i) {
        const proto::OpDesc& op = main.ops(i);
        const bool mine =
            (op.type() == "c_wait" && OpInput(op, "Handle")[0] == handle) ||
            (op.type() == "c_allgather" && OpOutput(op, "Handle")[0] == handle);
        if (!mine) continue;
        if (op.type() == "c_wait") {
          wait = i;
          ++waits_of_it;
          EXPECT_TRUE(GetOpAttrAs<bool>(op, "idle_ok"));
        } else {
          gather = i;
        }
      }
      ASSERT_EQ(waits_of_it, 1);
      ASSERT_GE(gather, 0);
      // The wait comes before anything reads the bucket, and right before
      // the first reader (nothing but other waits between them).
      const int reader = FirstReaderOf(main, vars);
      EXPECT_LT(wait, reader);
      for (int i = wait + 1; i < reader; ++i)
        EXPECT_EQ(main.ops(i).type(), "c_wait") << "op #" << i;
      // The gather comes after the update of the shard, which it follows.
      const std::string shard = OpInput(main.ops(gather), "X")[0];
      int update = -1;
      for (int i = 0; i < main.ops_size(); ++i)
        if (OpInput(main.ops(i), "Param") == std::vector<std::string>{shard})
          update = i;
      EXPECT_GE(update, 0);
      EXPECT_LT(update, gather);
      EXPECT_LT(wait, update);
      waits.push_back(wait);
    }
    // The waits are spread over the forward pass, not bunched at its start.
    std::sort(waits.begin(), waits.end());
    EXPECT_LT(waits.front() + static_cast<int>(waits.size()) - 1, waits.back());
    EXPECT_NO_THROW(LintSharded(out.main(), 4));
  }
}

TEST(ShardLint, OverlappedGatherRejectsAMissingWaitOrGatherAndAnEarlyRead) {
  EXPECT_NO_THROW(LintSharded(Overlapped(2).main(), 4));
  proto::TrainingJob no_wait = Overlapped(2);
  DropFirst(&no_wait, "c_wait");
  ExpectLintError(no_wait, "gather is never waited for");

  proto::TrainingJob no_gather = Overlapped(2);
  DropFirst(&no_gather, "c_allgather");
  ExpectLintError(no_gather, "has 0 c_allgather op(s) reading");

  // The wait of the first bucket moved after its first reader.
  proto::TrainingJob late = Overlapped(2);
  auto* ops = late.mutable_main()->mutable_blocks(0)->mutable_ops();
  int wait = 0;
  while (ops->Get(wait).type() != "c_wait") ++wait;
  const std::string handle = OpInput(ops->Get(wait), "Handle")[0];
  const int reader = FirstReaderOf(
      late.main().blocks(0), GatheredByHandle(late.main().blocks(0))[handle]);
  for (int i = wait; i < reader; ++i) ops->SwapElements(i, i + 1);
  ExpectLintError(late, "before the wait for the previous step's gather");

  // A read of the parameters after the gather, in the same run.
  proto::TrainingJob after = Overlapped(2);
  auto* block = after.mutable_main()->mutable_blocks(0);
  for (const auto& op : after.main().blocks(0).ops())
    if (op.type() == "mul") {
      *block->add_ops() = op;
      break;
    }
  ExpectLintError(after, "while its gather is in flight");

  // A handle that does not live across runs.
  proto::TrainingJob local = Overlapped(2);
  for (auto& v : *local.mutable_main()->mutable_blocks(0)->mutable_vars())
    if (v.name() == handle) v.set_persistable(false);
  ExpectLintError(local, "does not live across runs");
}

}  // namespace
}  // namespace fluid
