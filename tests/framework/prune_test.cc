// Prune and SetIsTest: the ops a target needs, feeds cutting the graph, and
// the test-time switch on ops that declare it.
#include "src/framework/prune.h"

#include <gtest/gtest.h>

#include "src/framework/backward.h"
#include "src/framework/op_registry.h"
#include "src/framework/operator.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace {

// An op whose schema declares is_test (as dropout and batch norm do).
REGISTER_OP(test_prune_dropout)
    .Input("X", "input")
    .Output("Out", "output")
    .Attr<bool>("is_test", false, "test-time behaviour");

std::vector<std::string> OpTypes(const proto::ProgramDesc& p) {
  std::vector<std::string> types;
  for (const auto& op : p.blocks(0).ops()) types.push_back(op.type());
  return types;
}

std::string ErrorOf(const proto::ProgramDesc& p,
                    const std::vector<std::string>& feeds,
                    const std::vector<std::string>& targets) {
  try {
    Prune(p, feeds, targets);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// s = mul(x, w) * w + mul(x, w); loss = mean(s); u = mul(x, w2) unused by s.
proto::ProgramDesc TrainingProgram() {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "x", DataType::kFloat64, Shape{-1, 3})->set_stop_gradient(true);
  for (const char* w : {"w", "w2"})
    AddVarDesc(b, w, DataType::kFloat64, Shape{3, 3}, true)
        ->set_trainable(true);
  auto add = [&](proto::OpDesc op) {
    *b->add_ops() = op;
    InferShapeAtCompileTime(op, b);
  };
  add(MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"h"}}}));
  add(MakeOp("mul", {{"X", {"x"}}, {"Y", {"w2"}}}, {{"Out", {"u"}}}));
  add(MakeOp("mul", {{"X", {"h"}}, {"Y", {"w"}}}, {{"Out", {"a"}}}));
  add(MakeOp("elementwise_add", {{"X", {"a"}}, {"Y", {"h"}}},
             {{"Out", {"s"}}}));
  add(MakeOp("elementwise_add", {{"X", {"s"}}, {"Y", {"u"}}},
             {{"Out", {"t"}}}));
  add(MakeOp("mean", {{"X", {"t"}}}, {{"Out", {"loss"}}}));
  AppendBackward(&p, "loss");
  return p;
}

TEST(Prune, KeepsOnlyTheForwardOpsTheTargetNeeds) {
  const proto::ProgramDesc p = TrainingProgram();
  const proto::ProgramDesc pruned = Prune(p, {"x"}, {"s"});
  EXPECT_EQ(OpTypes(pruned),
            (std::vector<std::string>{"mul", "mul", "elementwise_add"}));
  std::vector<std::string> vars;
  for (const auto& v : pruned.blocks(0).vars()) vars.push_back(v.name());
  EXPECT_EQ(vars, (std::vector<std::string>{"x", "w", "h", "a", "s"}));
  EXPECT_EQ(pruned.distribution(), proto::ProgramDesc::LOCAL);
}

TEST(Prune, AFedVarCutsOffWhatComputesIt) {
  const proto::ProgramDesc pruned = Prune(TrainingProgram(), {"h"}, {"s"});
  EXPECT_EQ(OpTypes(pruned),
            (std::vector<std::string>{"mul", "elementwise_add"}));
  EXPECT_EQ(FindVarDesc(pruned.blocks(0), "x"), nullptr);
}

TEST(Prune, RefusesTargetsItCannotCompute) {
  const proto::ProgramDesc p = TrainingProgram();
  EXPECT_NE(ErrorOf(p, {}, {"s"}).find("needs var 'x'"), std::string::npos)
      << ErrorOf(p, {}, {"s"});
  EXPECT_NE(ErrorOf(p, {"x"}, {"nope"}).find("target var 'nope'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(p, {"zz"}, {"s"}).find("feed var 'zz'"), std::string::npos);
  EXPECT_NE(ErrorOf(p, {"x"}, {"w@GRAD"}).find("'w@GRAD'"), std::string::npos);
  EXPECT_NE(ErrorOf(p, {"x"}, {}).find("no target"), std::string::npos);
}

TEST(SetIsTest, SwitchesEveryOpThatHasTheAttr) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  *b->add_ops() = MakeOp("test_prune_dropout", {{"X", {"x"}}},
                         {{"Out", {"y"}}});  // declared by the schema
  *b->add_ops() = MakeOp("not_registered_anywhere", {}, {{"Out", {"z"}}},
                         {{"is_test", false}});  // carried by the desc
  *b->add_ops() = MakeOp("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"w"}}});
  SetIsTest(&p);
  EXPECT_TRUE(GetOpAttrAs<bool>(b->ops(0), "is_test"));
  EXPECT_TRUE(GetOpAttrAs<bool>(b->ops(1), "is_test"));
  EXPECT_FALSE(HasOpAttr(b->ops(2), "is_test"));
}

TEST(SetIsTest, CloneForTestAndPruneApplyIt) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "x", DataType::kFloat32, Shape{-1, 3});
  AddVarDesc(b, "y", DataType::kFloat32, Shape{-1, 3});
  *b->add_ops() = MakeOp("test_prune_dropout", {{"X", {"x"}}}, {{"Out", {"y"}}},
                         {{"is_test", false}});
  EXPECT_TRUE(GetOpAttrAs<bool>(CloneForTest(p).blocks(0).ops(0), "is_test"));
  EXPECT_TRUE(
      GetOpAttrAs<bool>(Prune(p, {"x"}, {"y"}).blocks(0).ops(0), "is_test"));
  EXPECT_FALSE(GetOpAttrAs<bool>(b->ops(0), "is_test"));  // source unchanged
}

}  // namespace
}  // namespace fluid
