// The sharded-optimizer rewrite: its op sequence, its state, its lint; no
// MPI and no kernels.
#include "transpiler/shard_optimizer.h"

#include <gtest/gtest.h>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/transpiler/testdata.h"

namespace fluid {
namespace {

std::vector<std::string> Types(const proto::ProgramDesc& p) {
  return testing::OpTypes(p);
}

proto::TrainingJob Sharded(int stage, int nranks = 4) {
  CollectiveConfig cfg;
  cfg.nranks = nranks;
  cfg.shard_optimizer = stage;
  return CollectiveTranspile(testing::LoadTestJob("mlp"), cfg);
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

TEST(ShardOptimizer, RefusesGradientReadersAndCompressionWithAMessage) {
  proto::TrainingJob job = testing::LoadTestJob("mlp");
  auto* ops = job.mutable_main()->mutable_blocks(0)->mutable_ops();
  for (int i = 0; i < ops->size(); ++i)
    if (ops->Get(i).type() == "momentum") {
      proto::OpDesc clip =
          MakeOp("scale", {{"X", {"fc_0.w_0@GRAD"}}},
                 {{"Out", {"fc_0.w_0@GRAD"}}}, {{"scale", 0.5f}});
      SetOpAttr(&clip, kOpRoleAttr, static_cast<int>(OpRole::kOptimize));
      *ops->Add() = clip;
      for (int j = ops->size() - 1; j > i; --j) ops->SwapElements(j, j - 1);
      break;
    }
  CollectiveConfig cfg;
  cfg.nranks = 2;
  cfg.shard_optimizer = 2;
  try {
    CollectiveTranspile(job, cfg);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reads gradient 'fc_0.w_0@GRAD'"),
              std::string::npos)
        << e.what();
  }
  cfg.grad_compression = "bf16";
  EXPECT_THROW(CollectiveTranspile(testing::LoadTestJob("mlp"), cfg), Error);
  cfg.grad_compression = "none";
  cfg.shard_optimizer = 3;
  EXPECT_THROW(CollectiveTranspile(testing::LoadTestJob("mlp"), cfg), Error);
}

}  // namespace
}  // namespace fluid
