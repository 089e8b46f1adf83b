// The sharded-optimizer rewrite: its op sequence, its state, its lint; no
// MPI and no kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/transpiler/testdata.h"
#include "transpiler/collective_transpiler.h"
#include "transpiler/shard_params.h"
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

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Stage 3 with one bucket per parameter: those of `threshold` elements or
// more are sharded.
proto::TrainingJob Stage3(int64_t threshold = 100, int prefetch = 1,
                          int64_t reuse = 0) {
  proto::DistributedStrategy cfg;
  cfg.set_sharding(true);
  cfg.mutable_sharding_configs()->set_stage(3);
  cfg.mutable_sharding_configs()->set_param_persistence_threshold(threshold);
  cfg.mutable_sharding_configs()->set_prefetch_distance(prefetch);
  cfg.mutable_sharding_configs()->set_max_reuse_distance(reuse);
  cfg.set_bucket_bytes(1);
  return CollectiveTranspile(testing::LoadTestJob("mlp"), cfg, 4);
}

TEST(ShardParams, LargeParametersLiveAsShardsAndAreGatheredWhereRead) {
  const proto::TrainingJob out = Stage3();
  const proto::BlockDesc& main = out.main().blocks(0);
  int sharded = 0, replicated = 0;
  const proto::TrainingJob plain = testing::LoadTestJob("mlp");
  for (const auto& v : plain.main().blocks(0).vars()) {
    if (!v.trainable()) continue;
    const bool large = VarShape(v).numel() >= 100;
    EXPECT_EQ(GetVarDesc(main, v.name()).persistable(), !large) << v.name();
    (large ? sharded : replicated)++;
  }
  ASSERT_GT(sharded, 0);
  ASSERT_GT(replicated, 0);
  const std::vector<std::string> buffers = ParamShardBuffers(main);
  EXPECT_EQ(static_cast<int>(buffers.size()), sharded);
  const std::vector<std::string> t = Types(out.main());
  for (const auto& b : buffers) {
    EXPECT_TRUE(GetVarDesc(main, ShardName(b)).persistable()) << b;
    int gathers = 0, frees = 0;
    for (const auto& op : main.ops()) {
      if (op.type() == "c_allgather" && OpOutput(op, "Out")[0] == b) ++gathers;
      if (op.type() == "delete_var" && ReadsVar(op, b)) ++frees;
      // The update writes the persistable shard in place.
      if (op.type() == "momentum" && OpInput(op, "Param")[0] == ShardName(b)) {
        EXPECT_EQ(OpOutput(op, "ParamOut")[0], ShardName(b));
      }
    }
    // Read in the forward pass and in the backward pass (mul_grad reads
    // the weight): gathered and freed in each, or kept across.
    EXPECT_GE(gathers, 1) << b;
    EXPECT_EQ(gathers, frees) << b;
  }
  // The startup makes each shard from the initialised parameters, then
  // frees them.
  int assigns = 0;
  for (const auto& op : out.startup().blocks(0).ops())
    if (op.type() == "assign" && IsShardVar(OpOutput(op, "Out")[0])) ++assigns;
  EXPECT_EQ(assigns, sharded);
  EXPECT_EQ(Count(Types(out.startup()), "delete_var"), sharded);
  // What a rank holds: the shards of the sharded parameters.
  const StateBytes stage2 = PerRankStateBytes(Sharded(2).main());
  const StateBytes s3 = PerRankStateBytes(out.main());
  EXPECT_LT(s3.parameters, stage2.parameters / 2);
}

// Index of the first op of `type` touching `var`.
int FirstOp(const proto::BlockDesc& block, const std::string& type,
            const std::string& var, int from = 0) {
  for (int i = from; i < block.ops_size(); ++i)
    if (block.ops(i).type() == type &&
        (ReadsVar(block.ops(i), var) || WritesVar(block.ops(i), var)))
      return i;
  return -1;
}

// max_reuse_distance: a bucket whose backward pass reads it again before
// more than that many elements of other buckets are read keeps its
// gathered copy: gathered and freed once a step instead of twice. The
// last layer's buckets are read again at once; the earlier a layer, the
// more of the other buckets its backward reader waits behind (of the test
// mlp's six buckets: 2 kept at 0, 4 at 4000 elements, all 6 unlimited).
TEST(ShardParams, ABucketReusedSoonKeepsItsGatheredCopy) {
  auto gathers = [](const proto::TrainingJob& out) {
    std::map<std::string, int> n;
    const proto::BlockDesc& main = out.main().blocks(0);
    for (const auto& b : ParamShardBuffers(main)) n[b] = 0;
    for (const auto& op : main.ops())
      if (op.type() == "c_allgather") ++n[OpOutput(op, "Out")[0]];
    return n;
  };
  const auto none = gathers(Stage3(100, 0, 0));
  const auto all = gathers(Stage3(100, 0, int64_t{1} << 40));
  ASSERT_EQ(none.size(), all.size());
  int twice = 0;
  for (const auto& [b, n] : none) {
    SCOPED_TRACE(b);
    twice += n == 2;
    EXPECT_EQ(all.at(b), 1);  // every bucket: once a step
  }
  EXPECT_GE(twice, 2);  // without reuse, the early layers' twice
  // The limit counts elements: one just under what the first bucket waits
  // behind keeps the later buckets but not it.
  const auto some = gathers(Stage3(100, 0, 4000));
  int kept = 0;
  for (const auto& [b, n] : some) kept += n == 1;
  EXPECT_GT(kept, static_cast<int>(none.size()) - twice);
  EXPECT_LT(kept, static_cast<int>(all.size()));
  // The lint accepts each: every read follows a gather, none a free.
  for (int64_t reuse : {int64_t{0}, int64_t{4000}, int64_t{1} << 40})
    EXPECT_NO_THROW(LintParamShards(Stage3(100, 0, reuse).main().blocks(0)));
}

// The startup makes one sharded bucket whole at a time: its parameters
// initialised, broadcast, cut to the shard and freed before the next
// bucket's are initialised (a model whose parameters together exceed a
// rank can start); every broadcast still follows its initialiser.
TEST(ShardParams, TheStartupHoldsOneShardedBucketWholeAtATime) {
  const proto::TrainingJob out = Stage3();
  const proto::BlockDesc& startup = out.startup().blocks(0);
  std::map<std::string, std::string> bucket_of;  // parameter -> buffer
  for (const auto& op : startup.ops())
    if (op.type() == "coalesce_tensor")
      for (const auto& p : OpOutput(op, "Output"))
        bucket_of[p] = OpOutput(op, "FusedOutput")[0];
  ASSERT_GE(ParamShardBuffers(out.main().blocks(0)).size(), 3u);
  std::set<std::string> whole;  // buckets with a parameter made, not freed
  size_t most = 0;
  std::set<std::string> initialised;
  for (const auto& op : startup.ops()) {
    if (op.type() == "c_broadcast") {
      EXPECT_TRUE(initialised.count(OpInput(op, "X")[0]))
          << OpInput(op, "X")[0] << " broadcast before its initialiser";
    } else if (op.type() == "delete_var") {
      for (const auto& n : OpInput(op, "X"))
        if (bucket_of.count(n)) whole.erase(bucket_of.at(n));
    } else if (op.type() != "coalesce_tensor") {
      for (const auto& n : OpOutputNames(op)) {
        initialised.insert(n);
        if (bucket_of.count(n)) whole.insert(bucket_of.at(n));
      }
    }
    most = std::max(most, whole.size());
  }
  EXPECT_EQ(most, 1u);
  EXPECT_TRUE(whole.empty());
  EXPECT_NO_THROW(CollectiveTranspile(testing::LoadTestJob("mlp"),
                                      out.strategy(), 4));  // the lints
}

TEST(ShardParams, GathersArePrefetchedOneBucketAhead) {
  for (int prefetch : {0, 1}) {
    const proto::TrainingJob out = Stage3(100, prefetch);
    const proto::BlockDesc& main = out.main().blocks(0);
    const std::vector<std::string> buffers = ParamShardBuffers(main);
    ASSERT_GE(buffers.size(), 2u);
    // Forward order: the bucket gathered first is waited for first; with
    // prefetch 1, the next bucket's gather is issued before that wait.
    std::vector<std::pair<int, std::string>> waits;
    for (const auto& b : buffers)
      waits.emplace_back(FirstOp(main, "c_wait", b), b);
    std::sort(waits.begin(), waits.end());
    const int second_gather = FirstOp(main, "c_allgather", waits[1].second);
    if (prefetch == 1) {
      EXPECT_LT(second_gather, waits[0].first);
    } else {
      EXPECT_GT(second_gather, waits[0].first);
    }
  }
}

// Each bucket's gradient buffer is waited for and freed just before the
// buffer two buckets later is laid out (after the next one's: its
// reduce-scatter overlaps the next bucket's backward ops), so that at most
// three exist at once.
TEST(ShardParams, GradientBuffersAreFreedTwoBucketsLater) {
  const proto::TrainingJob out = Stage3(1);  // every parameter sharded
  const proto::BlockDesc& main = out.main().blocks(0);
  std::vector<std::string> grads;  // in reduce-scatter order
  for (const auto& op : main.ops())
    if (op.type() == "c_reducescatter") grads.push_back(OpInput(op, "X")[0]);
  ASSERT_GE(grads.size(), 4u);
  auto layout = [&](const std::string& g) {
    for (int i = 0; i < main.ops_size(); ++i)
      if (main.ops(i).type() == "coalesce_tensor" &&
          OpOutput(main.ops(i), "FusedOutput")[0] == g)
        return i;
    return -1;
  };
  for (size_t j = 0; j + 2 < grads.size(); ++j) {
    SCOPED_TRACE(grads[j]);
    const int reduce = FirstOp(main, "c_reducescatter", grads[j]);
    const int wait = FirstOp(main, "c_wait", ShardName(grads[j]));
    const int free = FirstOp(main, "delete_var", grads[j]);
    EXPECT_LT(reduce, wait);
    EXPECT_EQ(free, wait + 1);
    EXPECT_LT(free, layout(grads[j + 2]));
    EXPECT_GT(wait, layout(grads[j + 1]));
  }
  int live = 0, most = 0;
  for (const auto& op : main.ops()) {
    const std::vector<std::string> fused = OpOutput(op, "FusedOutput");
    if (op.type() == "coalesce_tensor" && !fused.empty() &&
        fused[0].rfind("fused_grad_", 0) == 0 &&
        std::find(grads.begin(), grads.end(), fused[0]) != grads.end())
      most = std::max(most, ++live);
    if (op.type() == "delete_var")
      for (const auto& g : grads) live -= ReadsVar(op, g) ? 1 : 0;
  }
  EXPECT_LE(most, 3);
  EXPECT_EQ(live, 0);
}

TEST(ShardParams, LintRejectsAReadBeforeItsGatherAndAReadAfterTheFree) {
  const proto::TrainingJob out = Stage3();
  const std::string b = ParamShardBuffers(out.main().blocks(0))[0];
  {
    // The wait moved after the bucket's first reader.
    proto::ProgramDesc bad = out.main();
    auto* ops = bad.mutable_blocks(0)->mutable_ops();
    const int wait = FirstOp(bad.blocks(0), "c_wait", b);
    ops->SwapElements(wait, wait + 1);
    const std::string reader = ops->Get(wait).type();
    const std::string msg = ErrorOf([&] { LintSharded(bad, 4); });
    EXPECT_NE(msg.find("op #" + std::to_string(wait) + " '" + reader + "'"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("before its gather is waited for"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("of sharded parameter buffer '" + b + "'"),
              std::string::npos)
        << msg;
  }
  {
    // The forward free moved before the bucket's last forward reader.
    proto::ProgramDesc bad = out.main();
    auto* ops = bad.mutable_blocks(0)->mutable_ops();
    const int free = FirstOp(bad.blocks(0), "delete_var", b);
    ops->SwapElements(free, free - 1);
    const std::string msg = ErrorOf([&] { LintSharded(bad, 4); });
    EXPECT_NE(msg.find("op #" + std::to_string(free) + " '"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("after op #" + std::to_string(free - 1) +
                       " 'delete_var' freed it"),
              std::string::npos)
        << msg;
  }
}

TEST(ShardParams, RefusesOverlappedGathers) {
  proto::DistributedStrategy cfg;
  cfg.set_sharding(true);
  cfg.mutable_sharding_configs()->set_stage(3);
  cfg.mutable_sharding_configs()->set_overlap_gather(true);
  const std::string msg = ErrorOf(
      [&] { CollectiveTranspile(testing::LoadTestJob("mlp"), cfg, 2); });
  EXPECT_NE(msg.find("turn overlap_gather off"), std::string::npos) << msg;
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
