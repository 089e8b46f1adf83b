// The memory plan against what the executor's steps hold (the allocator's
// high-water mark), and what it reports.
#include "transpiler/memory_plan.h"

#include <gtest/gtest.h>

#include "src/builder/models.h"
#include "src/framework/executor.h"
#include "src/framework/memory.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/model_steps.h"
#include "transpiler/local_rewrites.h"
#include "transpiler/strategy.h"

namespace fluid {
namespace {

using testing::ErrorOf;

// The high-water mark of a one-process run's first steps, less what was in
// use before its startup program.
int64_t MeasuredPeak(const proto::TrainingJob& job, int64_t batch) {
  const FeedList feeds = testing::SyntheticFeeds(job, batch, 1);
  Executor exe;
  Scope scope;
  const int64_t base = GetMemoryUsage(Place::CPU()).in_use;
  ResetPeakMemory(Place::CPU());
  exe.RunOnce(job.startup(), &scope);
  auto main = exe.Prepare(job.main(), &scope);
  std::vector<Tensor> out;
  for (int step = 0; step < 3; ++step)
    exe.Run(main.get(), feeds, {job.loss_name()}, &out);
  return GetMemoryUsage(Place::CPU()).peak - base;
}

// The plan of `model` (with recompute when asked) against its measured
// peak; returns the plan.
MemoryPlan CheckAgainstMeasured(const std::string& model, int64_t batch,
                                bool recompute) {
  SCOPED_TRACE(model + (recompute ? " with recompute" : ""));
  proto::TrainingJob built = BuildModel(model);
  proto::DistributedStrategy strategy;
  strategy.set_recompute(recompute);
  const MemoryPlan plan = PlanJobMemory(built, strategy, 1, batch);
  built.mutable_strategy()->MergeFrom(strategy);
  const proto::TrainingJob job =
      LocalRewrites(built, CanonicalStrategy(built.strategy()));
  const int64_t measured = MeasuredPeak(job, batch);
  const double ratio = static_cast<double>(measured) / plan.total;
  EXPECT_GT(ratio, 0.9) << plan.ToString() << "measured " << measured;
  EXPECT_LT(ratio, 1.1) << plan.ToString() << "measured " << measured;
  EXPECT_EQ(plan.total, plan.parameters + plan.optimizer_state +
                            plan.other_state + plan.communication +
                            plan.gradients + plan.activations);
  EXPECT_GT(plan.parameters, 0);
  EXPECT_GT(plan.activations, 0);
  return plan;
}

TEST(MemoryPlan, WithinTenPercentOfTheMeasuredPeak) {
  CheckAgainstMeasured("mlp", 64, false);
  CheckAgainstMeasured("lenet", 64, false);
  CheckAgainstMeasured("resnet", 16, false);
  CheckAgainstMeasured("transformer", 8, false);
}

// Recompute frees the activations after the forward pass: the plan, which
// reads only the program, sees it with no knowledge of recompute.
TEST(MemoryPlan, FollowsRecompute) {
  for (const auto& [model, batch] :
       std::vector<std::pair<std::string, int64_t>>{{"resnet", 16},
                                                    {"transformer", 8}}) {
    const MemoryPlan plain = CheckAgainstMeasured(model, batch, false);
    const MemoryPlan recomputed = CheckAgainstMeasured(model, batch, true);
    EXPECT_LT(recomputed.activations, plain.activations) << model;
  }
}

TEST(MemoryPlan, NamesItsPartsAndLargestItems) {
  const proto::TrainingJob job = BuildModel("mlp");
  const MemoryPlan plan = PlanJobMemory(job, {}, 1, 64);
  // Momentum: one velocity per parameter.
  EXPECT_EQ(plan.optimizer_state, plan.parameters);
  ASSERT_FALSE(plan.largest.empty());
  for (size_t i = 1; i < plan.largest.size(); ++i)
    EXPECT_GE(plan.largest[i - 1].bytes, plan.largest[i].bytes);
  const std::string text = plan.ToString();
  for (const char* part :
       {"parameters", "optimizer state", "communication buffers", "gradients",
        "activations", "total", "largest items", plan.largest[0].name.c_str()})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  // The activations grow with the batch; the state does not.
  const MemoryPlan big = PlanJobMemory(job, {}, 1, 256);
  EXPECT_GT(big.activations, 2 * plan.activations);
  EXPECT_EQ(big.parameters, plan.parameters);
}

TEST(MemoryPlan, FollowsTheProgramOnNRanks) {
  const proto::TrainingJob job = BuildModel("mlp");
  const MemoryPlan one = PlanJobMemory(job, {}, 1, 32);
  const MemoryPlan two = PlanJobMemory(job, {}, 2, 32);
  // Two ranks: the gradients travel in buckets.
  EXPECT_EQ(one.communication, 0);
  EXPECT_GT(two.communication, 0);
  proto::DistributedStrategy sharded;
  sharded.set_sharding(true);
  sharded.mutable_sharding_configs()->set_stage(1);
  const MemoryPlan shard = PlanJobMemory(job, sharded, 4, 32);
  // Each of 4 ranks holds a quarter of the moments.
  EXPECT_LT(shard.optimizer_state, two.optimizer_state / 3);
}

// Stage 3 gathers one large parameter at a time (each is a bucket of its
// own), so its planned peak is no higher than stage 2's, which holds every
// parameter and the whole gradient buffer: the built-in mlp (2 MiB of
// weights, one bucket at stage 2) and lenet at np 4, batch 32, the
// trainer's defaults otherwise.
TEST(MemoryPlan, StageThreePeaksNoHigherThanStageTwo) {
  for (const char* model : {"mlp", "lenet"}) {
    const proto::TrainingJob job = BuildModel(model);
    int64_t total[4] = {};
    for (int stage : {2, 3}) {
      proto::DistributedStrategy s;
      s.set_sharding(true);
      s.mutable_sharding_configs()->set_stage(stage);
      total[stage] = PlanJobMemory(job, s, 4, 32).total;
    }
    EXPECT_LE(total[3], total[2]) << model;
  }
  // The shards a stage 3 rank holds count as its parameters (a quarter of
  // the large ones; the small ones are in a buffer of their own).
  proto::DistributedStrategy s;
  s.set_sharding(true);
  s.mutable_sharding_configs()->set_stage(3);
  const MemoryPlan plan = PlanJobMemory(BuildModel("mlp"), s, 4, 32);
  const MemoryPlan whole = PlanJobMemory(BuildModel("mlp"), {}, 4, 32);
  EXPECT_GT(plan.parameters, whole.parameters / 5);
  EXPECT_LT(plan.parameters, whole.parameters / 3);
  EXPECT_EQ(plan.other_state, whole.other_state);
}

// What delete_var frees lives from each write to the free, and again from
// its next write (a sharded job's parameters, gathered for the forward
// pass, freed, gathered again for the backward pass).
TEST(MemoryPlan, DeleteVarEndsALifeUntilTheNextWrite) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  for (const char* n : {"x", "a", "b", "c", "d"})
    AddVarDesc(b, n, DataType::kFloat32, Shape{256});  // 1 KiB each
  auto scale = [&](const char* in, const char* out) {
    *b->add_ops() = MakeOp("scale", {{"X", {in}}}, {{"Out", {out}}});
  };
  scale("x", "a");
  scale("a", "b");
  *b->add_ops() = MakeOp("delete_var", {{"X", {"a"}}}, {});
  scale("b", "c");
  scale("c", "a");
  scale("a", "d");
  const MemoryPlan plan = PlanProgramMemory(p, 1);
  // The feed x, and never more than two of a, b, c, d at once (a is not
  // live while b and c are).
  EXPECT_EQ(plan.activations, 3 * 1024) << plan.ToString();
}

TEST(MemoryPlan, ByteCounts) {
  EXPECT_EQ(ParseByteCount("1048576", "--memory-limit"), 1048576);
  EXPECT_EQ(ParseByteCount("512K", "--memory-limit"), 512 << 10);
  EXPECT_EQ(ParseByteCount("3M", "--memory-limit"), 3 << 20);
  EXPECT_EQ(ParseByteCount("2G", "--memory-limit"), int64_t{2} << 30);
  for (const char* bad : {"", "M", "12Q", "-5", "1.5G", "0"})
    EXPECT_NE(ErrorOf([&] {
                ParseByteCount(bad, "--memory-limit");
              }).find("--memory-limit must be"),
              std::string::npos)
        << bad;
}

TEST(MemoryPlan, RefusesBadArguments) {
  const proto::TrainingJob job = BuildModel("mlp");
  EXPECT_NE(ErrorOf([&] {
              PlanJobMemory(job, {}, 1, 0);
            }).find("batch_size must be >= 1, got 0"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              PlanJobMemory(job, {}, 0, 8);
            }).find("nranks must be >= 1, got 0"),
            std::string::npos);
}

}  // namespace
}  // namespace fluid
