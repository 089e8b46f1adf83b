// batch_norm and dropout as layers: the vars they declare, evaluation
// programs (CloneForTest switches them to inference), and what the
// collective transpiler does with them (sync_batch_norm, the stat sync
// program).
#include "src/builder/norm_layers.h"

#include <gtest/gtest.h>

#include "src/builder/layers.h"
#include "src/builder/optimizer.h"
#include "src/framework/backward.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "transpiler/collective_transpiler.h"

namespace fluid {
namespace {

using testing::ErrorThrownBy;

// x [N, 3, 4, 4] -> batch_norm -> dropout -> mean, SGD.
proto::TrainingJob NormJob() {
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  ProgramBuilder b(job.mutable_main(), job.mutable_startup(), 1);
  std::string x = layers::Data(&b, "x", Shape{3, 4, 4});
  std::string y = layers::BatchNorm(&b, x);
  std::string d = layers::Dropout(&b, y, 0.3f);
  std::string loss = layers::Mean(&b, d);
  OptimizerConfig opt;
  opt.type = "sgd";
  MakeOptimizer(opt)->Minimize(&b, loss);
  job.add_feed_names("x");
  job.set_loss_name(loss);
  return job;
}

const proto::OpDesc* FindOp(const proto::ProgramDesc& p,
                            const std::string& type) {
  for (const auto& op : p.blocks(0).ops())
    if (op.type() == type) return &op;
  return nullptr;
}

bool BoolAttr(const proto::OpDesc& op, const std::string& name) {
  AttributeMap attrs = OpRegistry::Global().Get(op.type()).ResolveAttrs(op);
  return GetAttr<bool>(attrs, name, op.type());
}

TEST(NormLayers, BatchNormDeclaresParamsAndPersistableStats) {
  proto::TrainingJob job = NormJob();
  const proto::BlockDesc& block = job.main().blocks(0);
  for (const char* p : {"batch_norm_0.w_0", "batch_norm_0.b_0"})
    EXPECT_TRUE(GetVarDesc(block, p).trainable()) << p;
  for (const char* s : {"batch_norm_0.w_1", "batch_norm_0.w_2"}) {
    const proto::VarDesc& v = GetVarDesc(block, s);
    EXPECT_TRUE(v.persistable()) << s;
    EXPECT_FALSE(v.trainable()) << s;
    EXPECT_EQ(VarShape(v), Shape({3})) << s;
  }
  const proto::OpDesc* bn = FindOp(job.main(), "batch_norm");
  ASSERT_NE(bn, nullptr);
  EXPECT_EQ(OpOutput(*bn, "MeanOut"), OpInput(*bn, "Mean"));
  EXPECT_EQ(OpOutput(*bn, "VarianceOut"), OpInput(*bn, "Variance"));
  // The running statistics get no gradient and no optimizer op.
  EXPECT_EQ(FindVarDesc(block, "batch_norm_0.w_1@GRAD"), nullptr);
  for (const auto& op : block.ops()) {
    if (op.type() == "sgd") {
      EXPECT_EQ(OpInput(op, "Param")[0].find("w_1"), std::string::npos);
    }
  }
}

TEST(NormLayers, DropoutHasAPersistableStepCounter) {
  proto::TrainingJob job = NormJob();
  const proto::VarDesc& step =
      GetVarDesc(job.main().blocks(0), "dropout_0.step");
  EXPECT_TRUE(step.persistable());
  EXPECT_FALSE(step.trainable());
  EXPECT_EQ(VarDtype(step), DataType::kInt64);
  const proto::OpDesc* d = FindOp(job.main(), "dropout");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(OpInput(*d, "Step"), OpOutput(*d, "StepOut"));
}

TEST(NormLayers, CloneForTestKeepsThemInInferenceMode) {
  proto::TrainingJob job = NormJob();
  for (const proto::ProgramDesc& test :
       {CloneForTest(job.main()),
        CloneForTest(CollectiveTranspile(job, {}, 1).main())}) {
    std::vector<std::string> types;
    for (const auto& op : test.blocks(0).ops()) types.push_back(op.type());
    EXPECT_EQ(types,
              (std::vector<std::string>{"batch_norm", "dropout", "mean"}));
    EXPECT_TRUE(BoolAttr(*FindOp(test, "batch_norm"), "is_test"));
    EXPECT_TRUE(BoolAttr(*FindOp(test, "dropout"), "is_test"));
    EXPECT_NO_THROW(CheckEvaluationProgram(test, "test"));
  }
  // The training form would move the statistics: not for evaluation.
  proto::ProgramDesc forward = CloneForTest(job.main());
  SetOpAttr(forward.mutable_blocks(0)->mutable_ops(0), "is_test", false);
  Error e = ErrorThrownBy([&] { CheckEvaluationProgram(forward, "test"); });
  EXPECT_NE(std::string(e.what()).find("batch_norm"), std::string::npos)
      << e.what();
}

TEST(NormLayers, SyncBatchNormSetsSyncStatsForwardAndBackward) {
  proto::TrainingJob job = NormJob();
  proto::DistributedStrategy cfg;
  proto::TrainingJob plain = CollectiveTranspile(job, cfg, 2);
  cfg.set_sync_batch_norm(true);
  proto::TrainingJob synced = CollectiveTranspile(job, cfg, 2);
  for (const char* type : {"batch_norm", "batch_norm_grad"}) {
    ASSERT_NE(FindOp(synced.main(), type), nullptr) << type;
    EXPECT_TRUE(BoolAttr(*FindOp(synced.main(), type), "sync_stats")) << type;
    EXPECT_FALSE(BoolAttr(*FindOp(plain.main(), type), "sync_stats")) << type;
  }
}

TEST(NormLayers, StatSyncProgramAveragesEveryRunningStatistic) {
  proto::TrainingJob job = NormJob();
  proto::ProgramDesc sync =
      StatSyncProgram(CollectiveTranspile(job, {}, 1).main());
  const proto::BlockDesc& block = sync.blocks(0);
  ASSERT_EQ(block.ops_size(), 2);
  const std::vector<std::string> stats = {"batch_norm_0.w_1",
                                          "batch_norm_0.w_2"};
  for (int i = 0; i < 2; ++i) {
    const proto::OpDesc& op = block.ops(i);
    EXPECT_EQ(op.type(), "c_allreduce");
    EXPECT_EQ(OpInput(op, "X"), std::vector<std::string>{stats[i]});
    EXPECT_EQ(OpOutput(op, "Out"), std::vector<std::string>{stats[i]});
    EXPECT_EQ(GetOpAttrAs<std::string>(op, "reduce_type"), "avg");
    EXPECT_TRUE(GetVarDesc(block, stats[i]).persistable());
  }
  EXPECT_EQ(RunningStatVars(job.main()), stats);
  // Nothing to do without batch_norm.
  proto::ProgramDesc empty = NewProgram();
  EXPECT_EQ(StatSyncProgram(empty).blocks(0).ops_size(), 0);
}

TEST(NormLayers, BadArgumentsNameLayerAndArgument) {
  proto::ProgramDesc main = NewProgram(), startup = NewProgram();
  ProgramBuilder b(&main, &startup);
  std::string flat = layers::Data(&b, "flat", Shape{}, DataType::kFloat32);
  std::string img = layers::Data(&b, "img", Shape{3, 4, 4});
  std::string msg = ErrorThrownBy([&] { layers::BatchNorm(&b, flat); }).what();
  EXPECT_NE(msg.find("layer 'batch_norm': argument 'input'"), std::string::npos)
      << msg;
  layers::BatchNormOptions o;
  o.data_layout = "NHWC";
  msg = ErrorThrownBy([&] { layers::BatchNorm(&b, img, o); }).what();
  EXPECT_NE(msg.find("argument 'data_layout'"), std::string::npos) << msg;
  msg = ErrorThrownBy([&] { layers::Dropout(&b, img, 1.5f); }).what();
  EXPECT_NE(msg.find("layer 'dropout': argument 'dropout_prob'"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace fluid
