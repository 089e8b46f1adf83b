// The collective transpiler and its lint with a sparse gradient (an
// embedding table's, SELECTED_ROWS): reduced by its own
// c_sparse_allreduce, never coalesced into a dense bucket, placed where
// the dense allreduce would be, and waited for before the optimizer.
#include <gtest/gtest.h>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "transpiler/collective_transpiler.h"
#include "transpiler/sharding.h"

namespace fluid {
namespace {

proto::OpDesc Role(proto::OpDesc op, OpRole role,
                   std::vector<std::string> role_var = {}) {
  SetOpAttr(&op, kOpRoleAttr, static_cast<int32_t>(role));
  if (!role_var.empty()) SetOpAttr(&op, kOpRoleVarAttr, role_var);
  return op;
}

proto::OpDesc Sgd(const std::string& p) {
  return Role(
      MakeOp(
          "sgd",
          {{"Param", {p}}, {"Grad", {p + "@GRAD"}}, {"LearningRate", {"lr"}}},
          {{"ParamOut", {p}}}),
      OpRole::kOptimize, {p, p + "@GRAD"});
}

// ids -> lookup_table(table) -> mul(w) -> mean; SGD on both parameters.
proto::TrainingJob EmbeddingJob() {
  proto::TrainingJob job;
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  auto* b = job.mutable_main()->mutable_blocks(0);
  AddVarDesc(b, "ids", DataType::kInt64, Shape{-1, 1})->set_stop_gradient(true);
  for (auto [name, shape] : std::vector<std::pair<std::string, Shape>>{
           {"table", Shape{1000, 8}}, {"w", Shape{8, 2}}}) {
    AddVarDesc(b, name, DataType::kFloat32, shape, true)->set_trainable(true);
    AddVarDesc(b, name + "@GRAD", DataType::kFloat32, shape);
    AddVarDesc(job.mutable_startup()->mutable_blocks(0), name,
               DataType::kFloat32, shape, true);
  }
  FindMutableVarDesc(b, "table@GRAD")->set_type(proto::VarDesc::SELECTED_ROWS);
  AddVarDesc(b, "lr", DataType::kFloat32, Shape{1}, true);
  for (const char* n : {"e", "y", "e@GRAD", "y@GRAD"})
    AddVarDesc(b, n, DataType::kFloat32, Shape{-1, 8});
  AddVarDesc(b, "loss", DataType::kFloat32, Shape{1});
  AddVarDesc(b, "loss@GRAD", DataType::kFloat32, Shape{1});
  *b->add_ops() = MakeOp("lookup_table", {{"W", {"table"}}, {"Ids", {"ids"}}},
                         {{"Out", {"e"}}}, {{"is_sparse", true}});
  *b->add_ops() = MakeOp("mul", {{"X", {"e"}}, {"Y", {"w"}}}, {{"Out", {"y"}}});
  *b->add_ops() =
      Role(MakeOp("mean", {{"X", {"y"}}}, {{"Out", {"loss"}}}), OpRole::kLoss);
  *b->add_ops() = Role(MakeOp("fill_constant", {}, {{"Out", {"loss@GRAD"}}}),
                       OpRole::kBackward);
  *b->add_ops() =
      Role(MakeOp("mean_grad", {{"X", {"y"}}, {"Out@GRAD", {"loss@GRAD"}}},
                  {{"X@GRAD", {"y@GRAD"}}}),
           OpRole::kBackward);
  *b->add_ops() = Role(
      MakeOp("mul_grad", {{"X", {"e"}}, {"Y", {"w"}}, {"Out@GRAD", {"y@GRAD"}}},
             {{"X@GRAD", {"e@GRAD"}}, {"Y@GRAD", {"w@GRAD"}}}),
      OpRole::kBackward, {"w", "w@GRAD"});
  *b->add_ops() = Role(
      MakeOp("lookup_table_grad",
             {{"W", {"table"}}, {"Ids", {"ids"}}, {"Out@GRAD", {"e@GRAD"}}},
             {{"W@GRAD", {"table@GRAD"}}}, {{"is_sparse", true}}),
      OpRole::kBackward, {"table", "table@GRAD"});
  *b->add_ops() = Sgd("w");
  *b->add_ops() = Sgd("table");
  return job;
}

std::vector<std::string> Types(const proto::ProgramDesc& p) {
  std::vector<std::string> t;
  for (const auto& op : p.blocks(0).ops()) t.push_back(op.type());
  return t;
}

TEST(SparseTranspile, SparseGradientGetsItsOwnReduction) {
  proto::DistributedStrategy cfg;
  cfg.set_sparse_dense_ratio(0.5);
  proto::TrainingJob out = CollectiveTranspile(EmbeddingJob(), cfg, 2);
  EXPECT_EQ(
      Types(out.main()),
      (std::vector<std::string>{
          "coalesce_tensor", "lookup_table", "mul", "mean", "fill_constant",
          "mean_grad", "mul_grad", "c_allreduce", "lookup_table_grad",
          "c_sparse_allreduce", "c_wait", "sgd", "c_wait", "sgd"}));
  const auto& block = out.main().blocks(0);
  EXPECT_EQ(OpOutput(block.ops(0), "Output"),
            std::vector<std::string>{"w@GRAD"});
  const proto::OpDesc& sparse = block.ops(9);
  EXPECT_EQ(OpInput(sparse, "X"), std::vector<std::string>{"table@GRAD"});
  EXPECT_EQ(OpOutput(sparse, "Out"), std::vector<std::string>{"table@GRAD"});
  EXPECT_EQ(GetOpAttrAs<std::string>(sparse, "reduce_type"), "avg");
  EXPECT_FLOAT_EQ(GetOpAttrAs<float>(sparse, "sparse_dense_ratio"), 0.5f);
  EXPECT_EQ(GetVarDesc(block, "table@GRAD@HANDLE").type(),
            proto::VarDesc::COMM_HANDLE);
  EXPECT_FLOAT_EQ(out.strategy().sparse_dense_ratio(), 0.5f);
  // Without overlap both reductions come after the backward pass.
  cfg.set_overlap_allreduce(false);
  out = CollectiveTranspile(EmbeddingJob(), cfg, 2);
  EXPECT_EQ(
      Types(out.main()),
      (std::vector<std::string>{
          "coalesce_tensor", "lookup_table", "mul", "mean", "fill_constant",
          "mean_grad", "mul_grad", "lookup_table_grad", "c_allreduce",
          "c_sparse_allreduce", "c_wait", "c_wait", "sgd", "sgd"}));
}

TEST(SparseTranspile, LintChecksTheKindAndThePlace) {
  proto::DistributedStrategy cfg;
  const proto::TrainingJob good = CollectiveTranspile(EmbeddingJob(), cfg, 2);
  LintCollective(good.main(), 2);
  auto error_of = [](const proto::ProgramDesc& p) {
    try {
      LintCollective(p, 2);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A sparse gradient reduced by the dense allreduce.
  proto::ProgramDesc bad = good.main();
  bad.mutable_blocks(0)->mutable_ops(9)->set_type("c_allreduce");
  EXPECT_NE(error_of(bad).find("'table@GRAD' holds sparse rows (SELECTED_ROWS) "
                               "but is reduced by c_allreduce"),
            std::string::npos)
      << error_of(bad);
  // The sparse reduction moved past the update reading the gradient.
  bad = good.main();
  auto* ops = bad.mutable_blocks(0)->mutable_ops();
  proto::OpDesc moved = ops->Get(9);
  ops->DeleteSubrange(9, 1);
  *bad.mutable_blocks(0)->add_ops() = moved;
  EXPECT_NE(error_of(bad).find("'table@GRAD' is allreduced"), std::string::npos)
      << error_of(bad);
  // Never reduced at all.
  bad = good.main();
  bad.mutable_blocks(0)->mutable_ops()->DeleteSubrange(9, 1);
  EXPECT_NE(error_of(bad).find("'table@GRAD' of parameter 'table' is never "
                               "allreduced"),
            std::string::npos)
      << error_of(bad);
}

// Under sharding (stages 1 to 3) the table, whose gradient holds sparse
// rows, stays whole on every rank: its c_sparse_allreduce and update are
// those of the unsharded program, while w is sharded.
TEST(SparseTranspile, ShardingKeepsASparseParameterWhole) {
  for (int stage : {1, 2, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    proto::DistributedStrategy cfg;
    cfg.set_sharding(true);
    cfg.mutable_sharding_configs()->set_stage(stage);
    cfg.mutable_sharding_configs()->set_param_persistence_threshold(1);
    const proto::TrainingJob out = CollectiveTranspile(EmbeddingJob(), cfg, 2);
    const auto& block = out.main().blocks(0);
    int reduce = -1, wait = -1, table_update = -1, w_update = -1;
    for (int i = 0; i < block.ops_size(); ++i) {
      const proto::OpDesc& op = block.ops(i);
      if (op.type() == "c_sparse_allreduce") reduce = i;
      if (op.type() == "c_wait" &&
          OpInput(op, "Handle") ==
              std::vector<std::string>{"table@GRAD@HANDLE"})
        wait = i;
      if (op.type() == "coalesce_tensor") {
        for (const auto& v : OpOutput(op, "Output")) EXPECT_NE(v, "table");
      }
      if (op.type() != "sgd") continue;
      if (OpInput(op, "Param") == std::vector<std::string>{"table"}) {
        EXPECT_EQ(OpInput(op, "Grad"), std::vector<std::string>{"table@GRAD"});
        table_update = i;
      } else {
        EXPECT_TRUE(IsShardVar(OpInput(op, "Param")[0]))
            << OpInput(op, "Param")[0];
        w_update = i;
      }
    }
    ASSERT_GE(reduce, 0);
    ASSERT_GE(wait, 0);
    EXPECT_EQ(OpOutput(block.ops(wait), "Out"),
              std::vector<std::string>{"table@GRAD"});
    EXPECT_LT(reduce, wait);
    EXPECT_LT(wait, table_update);
    EXPECT_GE(w_update, 0);
    EXPECT_TRUE(GetVarDesc(block, "table").persistable());
    EXPECT_EQ(GetVarDesc(block, "w").persistable(), stage != 3);
    EXPECT_EQ(PerRankStateBytes(out.main()).parameters,
              1000 * 8 * 4 + (stage == 3 ? 8 * 4 : 16 * 4));

    auto error_of = [](const proto::ProgramDesc& p) {
      try {
        LintSharded(p, 2);
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string();
    };
    EXPECT_EQ(error_of(out.main()), "");
    // The update moved before the wait for its gradient's reduction.
    proto::ProgramDesc bad = out.main();
    auto* ops = bad.mutable_blocks(0)->mutable_ops();
    ops->SwapElements(wait, table_update);
    EXPECT_NE(error_of(bad).find("the update of 'table' reads sparse gradient "
                                 "'table@GRAD' before its reduction is "
                                 "waited for"),
              std::string::npos)
        << error_of(bad);
    // Summed rather than averaged.
    bad = out.main();
    SetOpAttr(bad.mutable_blocks(0)->mutable_ops(reduce), "reduce_type",
              std::string("sum"));
    EXPECT_NE(error_of(bad).find("'table@GRAD' is summed, not averaged"),
              std::string::npos)
        << error_of(bad);
  }
}

}  // namespace
}  // namespace fluid
