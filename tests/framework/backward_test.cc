#include "src/framework/backward.h"

#include <gtest/gtest.h>

#include <cmath>

#include "src/builder/models.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "transpiler/collective_transpiler.h"

namespace fluid {
namespace {

using testing::RandomTensor;

class ProgramBuilderForTest {
 public:
  ProgramBuilderForTest() : p_(NewProgram()) {}
  proto::BlockDesc* block() { return p_.mutable_blocks(0); }
  void Data(const std::string& n, Shape s) {
    AddVarDesc(block(), n, DataType::kFloat64, s)->set_stop_gradient(true);
  }
  void Param(const std::string& n, Shape s, bool trainable = true) {
    auto* v = AddVarDesc(block(), n, DataType::kFloat64, s, true);
    v->set_trainable(trainable);
    v->set_stop_gradient(!trainable);
  }
  void Op(proto::OpDesc op) {
    *block()->add_ops() = op;
    InferShapeAtCompileTime(op, block());
  }
  proto::ProgramDesc& program() { return p_; }

 private:
  proto::ProgramDesc p_;
};

// loss = mean(mul(mul(x, w), w) + mul(x, w)): w is read twice and so is h.
ProgramBuilderForTest SharedUseProgram() {
  ProgramBuilderForTest b;
  b.Data("x", {-1, 3});
  b.Param("w", {3, 3});
  b.Op(MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"h"}}}));
  b.Op(MakeOp("mul", {{"X", {"h"}}, {"Y", {"w"}}}, {{"Out", {"a"}}}));
  b.Op(MakeOp("elementwise_add", {{"X", {"a"}}, {"Y", {"h"}}},
              {{"Out", {"s"}}}));
  b.Op(MakeOp("mean", {{"X", {"s"}}}, {{"Out", {"loss"}}}));
  return b;
}

int CountWriters(const proto::ProgramDesc& p, const std::string& var) {
  int n = 0;
  for (const auto& op : p.blocks(0).ops())
    for (const auto& o : OpOutputNames(op)) n += o == var;
  return n;
}

// d(loss)/d(param) by central differences through the forward program.
std::vector<double> NumericGrad(const proto::ProgramDesc& program,
                                const std::string& param, const Tensor& init,
                                const FeedList& feeds) {
  proto::ProgramDesc fwd = CloneForTest(program);
  Executor exe;
  Scope scope;
  for (const auto& v : program.blocks(0).vars())
    if (v.persistable()) scope.Var(v.name());
  Tensor* w = scope.Var(param)->GetMutableTensor();
  w->CopyFrom(init);
  auto prepared = exe.Prepare(fwd, &scope);
  std::vector<double> grad(init.numel());
  const double h = 1e-6;
  for (int64_t i = 0; i < init.numel(); ++i) {
    double orig = w->data<double>()[i];
    std::vector<Tensor> out;
    w->data<double>()[i] = orig + h;
    exe.Run(prepared.get(), feeds, {"loss"}, &out);
    double fp = out[0].data<double>()[0];
    w->data<double>()[i] = orig - h;
    exe.Run(prepared.get(), feeds, {"loss"}, &out);
    double fm = out[0].data<double>()[0];
    w->data<double>()[i] = orig;
    grad[i] = (fp - fm) / (2 * h);
  }
  return grad;
}

TEST(Backward, AccumulatesGradientsOfVarsReadTwice) {
  auto b = SharedUseProgram();
  ParamGradList pairs = AppendBackward(&b.program(), "loss");
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0], std::make_pair(std::string("w"), std::string("w@GRAD")));
  // Both w@GRAD and h@GRAD are written once, by a summing op.
  EXPECT_EQ(CountWriters(b.program(), "w@GRAD"), 1);
  EXPECT_EQ(CountWriters(b.program(), "h@GRAD"), 1);
  int sums = 0;
  for (const auto& op : b.program().blocks(0).ops()) sums += op.type() == "sum";
  EXPECT_EQ(sums, 2);

  Tensor w = RandomTensor<double>({3, 3}, -1, 1, 11);
  FeedList feeds = {{"x", RandomTensor<double>({4, 3}, -1, 1, 12)}};
  Executor exe;
  Scope scope;
  scope.Var("w")->GetMutableTensor()->CopyFrom(w);
  std::vector<Tensor> out;
  exe.RunOnce(b.program(), &scope, feeds, {"w@GRAD"}, &out);
  std::vector<double> numeric = NumericGrad(b.program(), "w", w, feeds);
  auto analytic = testing::ToVector<double>(out[0]);
  for (size_t i = 0; i < numeric.size(); ++i)
    EXPECT_NEAR(analytic[i], numeric[i], 1e-6) << "w[" << i << "]";
}

TEST(Backward, HonoursStopGradientAndNoGradSet) {
  ProgramBuilderForTest b;
  b.Data("x", {-1, 3});
  b.Param("w", {3, 3});
  b.Param("frozen", {3, 3}, /*trainable=*/false);
  b.Param("skip", {3, 3});
  b.Op(MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"h"}}}));
  b.Op(MakeOp("mul", {{"X", {"h"}}, {"Y", {"frozen"}}}, {{"Out", {"g"}}}));
  b.Op(MakeOp("mul", {{"X", {"g"}}, {"Y", {"skip"}}}, {{"Out", {"k"}}}));
  b.Op(MakeOp("mean", {{"X", {"k"}}}, {{"Out", {"loss"}}}));
  ParamGradList pairs = AppendBackward(&b.program(), "loss", {"skip"});
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].first, "w");
  EXPECT_EQ(CountWriters(b.program(), "frozen@GRAD"), 0);
  EXPECT_EQ(CountWriters(b.program(), "skip@GRAD"), 0);
  EXPECT_EQ(CountWriters(b.program(), "x@GRAD"), 0) << "data gets no grad";
  // Gradient still flows *through* the frozen weight to w.
  EXPECT_EQ(CountWriters(b.program(), "w@GRAD"), 1);
  EXPECT_EQ(CountWriters(b.program(), "h@GRAD"), 1);
}

TEST(Backward, StopGradientOnAnIntermediateCutsTheGraph) {
  ProgramBuilderForTest b;
  b.Data("x", {-1, 3});
  b.Param("w", {3, 3});
  b.Param("v", {3, 3});
  b.Op(MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"h"}}}));
  FindMutableVarDesc(b.block(), "h")->set_stop_gradient(true);
  b.Op(MakeOp("mul", {{"X", {"h"}}, {"Y", {"v"}}}, {{"Out", {"k"}}}));
  b.Op(MakeOp("mean", {{"X", {"k"}}}, {{"Out", {"loss"}}}));
  ParamGradList pairs = AppendBackward(&b.program(), "loss");
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].first, "v");
  EXPECT_EQ(CountWriters(b.program(), "w@GRAD"), 0);
}

TEST(Backward, RolesAndOpRoleVars) {
  auto b = SharedUseProgram();
  int fwd_ops = b.program().blocks(0).ops_size();
  AppendBackward(&b.program(), "loss");
  const auto& ops = b.program().blocks(0).ops();
  EXPECT_EQ(OpRoleOf(ops[fwd_ops - 1]) & static_cast<int>(OpRole::kLoss),
            static_cast<int>(OpRole::kLoss));
  EXPECT_EQ(ops[fwd_ops].type(), "fill_constant");
  EXPECT_EQ(OpRoleOf(ops[fwd_ops]), OpRole::kBackward | OpRole::kLoss);
  bool found = false;
  for (int i = fwd_ops; i < ops.size(); ++i) {
    EXPECT_TRUE(OpRoleOf(ops[i]) & static_cast<int>(OpRole::kBackward));
    auto rv = OpRoleVarOf(ops[i]);
    if (!rv.empty()) {
      EXPECT_EQ(rv, (std::vector<std::string>{"w", "w@GRAD"}));
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(Backward, BadLossIsAnError) {
  auto b = SharedUseProgram();
  EXPECT_THROW(AppendBackward(&b.program(), "nope"), Error);
  auto c = SharedUseProgram();
  try {
    AppendBackward(&c.program(), "s");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one element"), std::string::npos);
  }
}

TEST(Backward, CloneForTestKeepsForwardOnly) {
  auto b = SharedUseProgram();
  int fwd_ops = b.program().blocks(0).ops_size();
  AppendBackward(&b.program(), "loss");
  proto::ProgramDesc t = CloneForTest(b.program());
  EXPECT_EQ(t.blocks(0).ops_size(), fwd_ops);
  EXPECT_EQ(FindVarDesc(t.blocks(0), "w@GRAD"), nullptr);
  EXPECT_NE(FindVarDesc(t.blocks(0), "w"), nullptr);
}

std::vector<std::string> OpTypes(const proto::ProgramDesc& p) {
  std::vector<std::string> types;
  for (const auto& op : p.blocks(0).ops()) types.push_back(op.type());
  return types;
}

// The forward part is the same whether derived from the plain main program,
// from its transpiled form (collective ops dropped), or from a program
// whose ops carry no op_role (judged by what they write).
TEST(Backward, CloneForTestDropsTrainingOpsWithOrWithoutRoles) {
  proto::TrainingJob job = BuildModel("mlp");
  const std::vector<std::string> forward = OpTypes(CloneForTest(job.main()));
  EXPECT_EQ(forward, OpTypes(job.test()));
  for (const std::string& t : forward) {
    EXPECT_EQ(t.find("_grad"), std::string::npos) << t;
    EXPECT_NE(t, "momentum");
  }

  proto::DistributedStrategy cfg;
  proto::TrainingJob dist = CollectiveTranspile(job, cfg, 2);
  EXPECT_EQ(OpTypes(CloneForTest(dist.main())), forward);

  proto::ProgramDesc roleless = job.main();
  for (auto& op : *roleless.mutable_blocks(0)->mutable_ops()) {
    auto* attrs = op.mutable_attrs();
    for (int i = attrs->size() - 1; i >= 0; --i)
      if (attrs->Get(i).name() == kOpRoleAttr) attrs->DeleteSubrange(i, 1);
  }
  EXPECT_EQ(OpTypes(CloneForTest(roleless)), forward);
}

TEST(Backward, CheckEvaluationProgramRefusesOpsThatTrain) {
  proto::TrainingJob job = BuildModel("mlp");
  CheckEvaluationProgram(job.test(), "test");
  try {
    CheckEvaluationProgram(job.main(), "the main program");
    FAIL() << "the main program passed as an evaluation program";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the main program holds op"),
              std::string::npos)
        << e.what();
  }
  proto::DistributedStrategy cfg;
  proto::TrainingJob dist = CollectiveTranspile(job, cfg, 2);
  proto::ProgramDesc with_allreduce = CloneForTest(dist.main());
  for (const auto& op : dist.main().blocks(0).ops())
    if (op.type() == "c_allreduce")
      *with_allreduce.mutable_blocks(0)->add_ops() = op;
  EXPECT_THROW(CheckEvaluationProgram(with_allreduce, "test"), Error);
}

}  // namespace
}  // namespace fluid
