// The collective transpiler with gradient clipping and weight decay: the
// ops that read a gradient on the optimizer's side (clips, decay, updates)
// come after that gradient's c_wait, so they see the averaged gradient, and
// the lint rejects a program where one reads it before.
#include <gtest/gtest.h>

#include "src/builder/models.h"
#include "src/framework/program_desc.h"
#include "transpiler/collective_transpiler.h"

namespace fluid {
namespace {

proto::TrainingJob MlpWithKnobs() {
  ModelOptions o;
  o.default_optimizer = false;
  o.optimizer.type = "momentum";
  o.optimizer.regularization = {Regularization::Kind::kL2, 1e-4f};
  o.optimizer.gradient_clip.kind = GradientClip::Kind::kByGlobalNorm;
  o.optimizer.gradient_clip.clip_norm = 1.0f;
  return BuildModel("mlp", o);
}

bool ReadsVar(const proto::OpDesc& op, const std::string& var) {
  for (const auto& n : OpInputNames(op))
    if (n == var) return true;
  return false;
}

// Index of the c_wait of the bucket holding `grad`.
int WaitOf(const proto::BlockDesc& block, const std::string& grad) {
  std::string fused;
  for (const auto& op : block.ops())
    if (op.type() == "coalesce_tensor")
      for (const auto& g : OpOutput(op, "Output"))
        if (g == grad) fused = OpOutput(op, "FusedOutput")[0];
  for (int i = 0; i < block.ops_size(); ++i)
    if (block.ops(i).type() == "c_wait" &&
        OpOutput(block.ops(i), "Out")[0] == fused)
      return i;
  return -1;
}

TEST(CollectiveKnobs, ClipAndDecayReadGradientsAfterTheirWait) {
  for (bool overlap : {true, false}) {
    proto::DistributedStrategy cfg;
    cfg.set_overlap_allreduce(overlap);
    cfg.set_bucket_bytes(64 << 10);  // several buckets
    proto::TrainingJob out = CollectiveTranspile(MlpWithKnobs(), cfg, 2);
    const proto::BlockDesc& block = out.main().blocks(0);
    int knob_reads = 0;
    for (const auto& pg : OptimizedParams(out.main())) {
      const int wait = WaitOf(block, pg.second);
      ASSERT_GE(wait, 0) << pg.second;
      for (int i = 0; i < block.ops_size(); ++i) {
        const proto::OpDesc& op = block.ops(i);
        if (!(OpRoleOf(op) & static_cast<int>(OpRole::kOptimize)) ||
            !ReadsVar(op, pg.second))
          continue;
        EXPECT_GT(i, wait) << op.type() << " reads " << pg.second;
        knob_reads += op.type() != "momentum";
      }
    }
    // squared_l2_norm, elementwise_mul (clip) and sum (decay) per gradient.
    EXPECT_EQ(knob_reads, 3 * 6);
  }
}

TEST(CollectiveKnobs, LintRejectsAClipReadingBeforeTheWait) {
  proto::DistributedStrategy cfg;
  proto::TrainingJob out = CollectiveTranspile(MlpWithKnobs(), cfg, 2);
  proto::BlockDesc* block = out.mutable_main()->mutable_blocks(0);
  const std::string grad = OptimizedParams(out.main())[0].second;
  const int wait = WaitOf(*block, grad);
  int norm = -1;
  for (int i = 0; i < block->ops_size() && norm < 0; ++i)
    if (block->ops(i).type() == "squared_l2_norm" &&
        ReadsVar(block->ops(i), grad))
      norm = i;
  ASSERT_GT(norm, wait);
  // Move the norm of the gradient to just before its c_wait.
  proto::OpDesc moved = block->ops(norm);
  for (int i = norm; i > wait; --i) *block->mutable_ops(i) = block->ops(i - 1);
  *block->mutable_ops(wait) = moved;
  try {
    LintCollective(out.main(), 2);
    FAIL() << "expected the lint to fail";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("squared_l2_norm"), std::string::npos) << msg;
    EXPECT_NE(msg.find(grad), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fluid
