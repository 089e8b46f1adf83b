// What the transpilers do with programs holding a loop's sub-block: the
// lint refuses a collective inside a sub-block and a gradient reduced
// twice; gradient merge, sharding stage 3 and the memory plan refuse such
// programs, naming the op.
#include "transpiler/control_flow_lint.h"

#include <gtest/gtest.h>

#include <string>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/transpiler/testdata.h"
#include "transpiler/local_rewrites.h"
#include "transpiler/memory_plan.h"

namespace fluid {
namespace {

// The mlp job with a block 1 run by a while op appended to block 0 (the
// lint and the refusals read the structure only).
proto::TrainingJob JobWithLoop() {
  proto::TrainingJob job = testing::LoadTestJob("mlp");
  proto::ProgramDesc* main = job.mutable_main();
  proto::BlockDesc* body = main->add_blocks();
  body->set_idx(1);
  body->set_parent_idx(0);
  *main->mutable_blocks(0)->add_ops() =
      MakeOp("while", {{"X", {}}, {"Condition", {"cond"}}}, {{"Out", {}}},
             {{"sub_block", 1}});
  return job;
}

std::string MessageOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented) << e.what();
    return e.what();
  }
  return "";
}

TEST(ControlFlowLint, RefusesACollectiveInsideALoop) {
  proto::TrainingJob job = JobWithLoop();
  EXPECT_TRUE(HasControlFlow(job.main()));
  EXPECT_FALSE(HasControlFlow(testing::LoadTestJob("mlp").main()));
  LintControlFlow(job.main());  // nothing communicates yet
  *job.mutable_main()->mutable_blocks(1)->add_ops() =
      MakeOp("c_allreduce", {{"X", {"g"}}}, {{"Out", {"g"}}});
  try {
    LintControlFlow(job.main());
    ADD_FAILURE() << "a collective in block 1 passed the lint";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'c_allreduce' of block 1"), std::string::npos) << msg;
  }
}

TEST(ControlFlowLint, RefusesAGradientReducedTwice) {
  proto::TrainingJob job = JobWithLoop();
  proto::BlockDesc* b = job.mutable_main()->mutable_blocks(0);
  for (int k = 0; k < 2; ++k)
    *b->add_ops() =
        MakeOp("c_allreduce", {{"X", {"w@GRAD"}}}, {{"Out", {"w@GRAD"}}});
  try {
    LintControlFlow(job.main());
    ADD_FAILURE() << "a gradient reduced twice passed the lint";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'w@GRAD' is reduced twice"), std::string::npos) << msg;
  }
}

TEST(ControlFlowLint, RewritesThatCannotSeeSubBlocksRefuse) {
  const proto::TrainingJob job = JobWithLoop();
  proto::DistributedStrategy merge;
  merge.set_gradient_merge(true);
  std::string msg = MessageOf([&] { LocalRewrites(job, merge); });
  EXPECT_NE(msg.find("gradient merge does not rewrite programs with control "
                     "flow: op #"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("'while' of block 0 runs block 1"), std::string::npos)
      << msg;
  proto::DistributedStrategy stage3;
  stage3.set_sharding(true);
  stage3.mutable_sharding_configs()->set_stage(3);
  msg = MessageOf([&] { LocalRewrites(job, stage3); });
  EXPECT_NE(msg.find("sharding stage 3"), std::string::npos) << msg;
  msg = MessageOf([&] { PlanJobMemory(job, {}, 1, 8); });
  EXPECT_NE(msg.find("the memory plan"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
