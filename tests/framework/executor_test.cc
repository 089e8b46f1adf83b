#include "src/framework/executor.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <fstream>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/programs.h"

namespace fluid {
namespace {

using testing::MakeTensor;
using testing::MulProgram;

using testing::ErrorOf;

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scope_.Var("w")->GetMutableTensor()->CopyFrom(
        MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
    prepared_ = exe_.Prepare(MulProgram(), &scope_);
  }
  Executor exe_;
  Scope scope_;
  std::unique_ptr<PreparedProgram> prepared_;
};

// A prepared block other than 0 is the block that runs: its feeds, its ops.
TEST_F(ExecutorTest, PreparedBlockIsTheOneThatRuns) {
  proto::ProgramDesc p = MulProgram();
  proto::BlockDesc* b1 = p.add_blocks();
  *b1 = p.blocks(0);
  b1->set_idx(1);
  b1->clear_ops();
  b1->clear_vars();
  AddVarDesc(b1, "x1", DataType::kFloat32, Shape{-1, 3});
  AddVarDesc(b1, "w", DataType::kFloat32, Shape{3, 2}, true);
  proto::OpDesc op =
      MakeOp("mul", {{"X", {"x1"}}, {"Y", {"w"}}}, {{"Out", {"y1"}}});
  *b1->add_ops() = op;
  InferShapeAtCompileTime(op, b1);
  auto prepared = exe_.Prepare(p, &scope_, 1);
  EXPECT_EQ(prepared->block_id(), 1);
  std::vector<Tensor> out;
  exe_.Run(prepared.get(), {{"x1", MakeTensor<float>({1, 3}, {1, 1, 1})}},
           {"y1"}, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(testing::ToVector<float>(out[0]), (std::vector<float>{9, 12}));
  // Block 0's feed is not this block's.
  EXPECT_NE(ErrorOf([&] {
              exe_.Run(prepared.get(),
                       {{"x", MakeTensor<float>({1, 3}, {1, 1, 1})}}, {"y1"},
                       &out);
            }).find("'x' is not a variable of the program"),
            std::string::npos);
}

TEST_F(ExecutorTest, FeedsAndFetches) {
  std::vector<Tensor> out;
  exe_.Run(prepared_.get(), {{"x", MakeTensor<float>({1, 3}, {1, 1, 1})}},
           {"y"}, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), Shape({1, 2}));
  EXPECT_EQ(testing::ToVector<float>(out[0]), (std::vector<float>{9, 12}));
  // A different batch size through the same prepared program.
  exe_.Run(prepared_.get(),
           {{"x", MakeTensor<float>({2, 3}, {1, 0, 0, 0, 0, 1})}}, {"y"}, &out);
  EXPECT_EQ(testing::ToVector<float>(out[0]), (std::vector<float>{1, 2, 5, 6}));
}

TEST_F(ExecutorTest, RepeatedRunsReuseVariablesAndMemory) {
  std::vector<Tensor> out;
  Tensor x = MakeTensor<float>({4, 3}, std::vector<float>(12, 1.0f));
  // y is fetched: eager deletion would drop a temporary nobody reads.
  exe_.Run(prepared_.get(), {{"x", x}}, {"y"}, &out);
  Variable* y = prepared_->local_scope()->FindVar("y");
  ASSERT_NE(y, nullptr);
  const void* mem = y->GetTensor().raw_data();
  const void* xmem =
      prepared_->local_scope()->FindVar("x")->GetTensor().raw_data();
  for (int i = 0; i < 5; ++i)
    exe_.Run(prepared_.get(), {{"x", x}}, {"y"}, &out);
  EXPECT_EQ(prepared_->local_scope()->FindVar("y"), y);
  EXPECT_EQ(y->GetTensor().raw_data(), mem);
  EXPECT_EQ(prepared_->local_scope()->FindVar("x")->GetTensor().raw_data(),
            xmem);
  // Persistable vars live in the outer scope, temporaries in the local one.
  EXPECT_EQ(prepared_->local_scope()->FindLocalVar("w"), nullptr);
  EXPECT_NE(scope_.FindLocalVar("w"), nullptr);
  EXPECT_EQ(scope_.FindLocalVar("y"), nullptr);
}

TEST_F(ExecutorTest, MissingFeedNamesTheVar) {
  std::string msg =
      ErrorOf([&] { exe_.Run(prepared_.get(), {}, {"y"}, nullptr); });
  EXPECT_NE(msg.find("missing feed 'x'"), std::string::npos) << msg;
}

TEST_F(ExecutorTest, WrongFeedShapeNamesTheVar) {
  std::string msg = ErrorOf([&] {
    exe_.Run(prepared_.get(),
             {{"x", MakeTensor<float>({2, 4}, std::vector<float>(8))}});
  });
  EXPECT_NE(msg.find("feed 'x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[-1, 3]"), std::string::npos) << msg;
}

TEST_F(ExecutorTest, WrongFeedDtypeNamesTheVar) {
  std::string msg = ErrorOf([&] {
    exe_.Run(prepared_.get(), {{"x", MakeTensor<double>({1, 3}, {1, 2, 3})}});
  });
  EXPECT_NE(msg.find("feed 'x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float64"), std::string::npos) << msg;
}

TEST_F(ExecutorTest, UnknownFeedAndFetchAreErrors) {
  Tensor x = MakeTensor<float>({1, 3}, {1, 1, 1});
  EXPECT_NE(ErrorOf([&] {
              exe_.Run(prepared_.get(), {{"x", x}, {"zz", x}});
            }).find("'zz'"),
            std::string::npos);
  std::vector<Tensor> out;
  EXPECT_NE(ErrorOf([&] {
              exe_.Run(prepared_.get(), {{"x", x}}, {"qq"}, &out);
            }).find("'qq'"),
            std::string::npos);
}

TEST(Executor, UninitialisedParameterNamesTheVar) {
  Executor exe;
  Scope scope;
  auto prepared = exe.Prepare(MulProgram(), &scope);
  std::string msg = ErrorOf([&] {
    exe.Run(prepared.get(), {{"x", MakeTensor<float>({1, 3}, {1, 1, 1})}});
  });
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("startup"), std::string::npos) << msg;
}

TEST(Executor, UnknownOpListsKnownOps) {
  proto::ProgramDesc p = MulProgram();
  p.mutable_blocks(0)->mutable_ops(0)->set_type("mull");
  Executor exe;
  Scope scope;
  std::string msg = ErrorOf([&] { exe.Prepare(p, &scope); });
  EXPECT_NE(msg.find("unknown op type 'mull'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("mul,"), std::string::npos) << msg;
}

TEST(Executor, UndeclaredVarIsNamed) {
  proto::ProgramDesc p = MulProgram();
  SetOpInput(p.mutable_blocks(0)->mutable_ops(0), "Y", {"ghost"});
  Executor exe;
  Scope scope;
  std::string msg = ErrorOf([&] { exe.Prepare(p, &scope); });
  EXPECT_NE(msg.find("'ghost'"), std::string::npos) << msg;
}

TEST(Executor, NewerProgramVersionIsRefused) {
  proto::ProgramDesc p = MulProgram();
  p.set_version(kProgramVersion + 1);
  Executor exe;
  Scope scope;
  std::string msg = ErrorOf([&] { exe.Prepare(p, &scope); });
  EXPECT_NE(msg.find("newer"), std::string::npos) << msg;
}

TEST(Executor, DoesNotModifyTheProgram) {
  proto::ProgramDesc p = MulProgram();
  std::string before = p.SerializeAsString();
  Executor exe;
  Scope scope;
  scope.Var("w")->GetMutableTensor()->CopyFrom(
      MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  exe.RunOnce(p, &scope, {{"x", MakeTensor<float>({1, 3}, {1, 1, 1})}});
  EXPECT_EQ(p.SerializeAsString(), before);
}

TEST(Executor, RunOnceLeavesNoTemporaries) {
  Executor exe;
  Scope scope;
  scope.Var("w")->GetMutableTensor()->CopyFrom(
      MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  exe.RunOnce(MulProgram(), &scope,
              {{"x", MakeTensor<float>({1, 3}, {1, 1, 1})}});
  EXPECT_EQ(scope.LocalVarNames(), std::vector<std::string>{"w"});
}

TEST(Executor, ThreadPoolGivesTheSameResult) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "x", DataType::kFloat64, Shape{-1, 300});
  AddVarDesc(b, "w", DataType::kFloat64, Shape{300, 200}, true);
  proto::OpDesc op =
      MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"y"}}});
  *b->add_ops() = op;
  InferShapeAtCompileTime(op, b);
  Tensor x = testing::RandomTensor<double>({64, 300}, -1, 1, 1);
  Tensor w = testing::RandomTensor<double>({300, 200}, -1, 1, 2);
  std::vector<Tensor> r1, r2;
  for (int threads : {1, 2}) {
    Executor exe(Place::CPU(), threads);
    Scope scope;
    scope.Var("w")->GetMutableTensor()->CopyFrom(w);
    exe.RunOnce(p, &scope, {{"x", x}}, {"y"}, threads == 1 ? &r1 : &r2);
  }
  auto a = testing::ToVector<double>(r1[0]);
  auto c = testing::ToVector<double>(r2[0]);
  ASSERT_EQ(a.size(), c.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], c[i], 1e-10);
}

// ---- the op context of errors escaping an op ----

// Fails as a kernel whose system call fails would: an I/O error with errno.
void FailKernel(const ExecutionContext&) {
  FLUID_THROW_OS(ErrorCode::kIO, EACCES, "boom");
}

REGISTER_OP(test_exec_fail)
    .Input("X")
    .Output("Out")
    .CPUKernel<float>(FailKernel);

// x -> scale -> y -> test_exec_fail -> z in block `block_id` (declared as
// the program's only block, or added after block 0): the failing op is
// op #1 of its block.
void AddFailingBlock(proto::ProgramDesc* p, int block_id) {
  proto::BlockDesc* b = block_id == 0 ? p->mutable_blocks(0) : p->add_blocks();
  b->set_idx(block_id);
  AddVarDesc(b, "x", DataType::kFloat32, Shape{-1, 3});
  AddVarDesc(b, "y", DataType::kFloat32, Shape{-1, 3});
  AddVarDesc(b, "z", DataType::kFloat32, Shape{-1, 3});
  *b->add_ops() = MakeOp("scale", {{"X", {"x"}}}, {{"Out", {"y"}}});
  *b->add_ops() = MakeOp("test_exec_fail", {{"X", {"y"}}}, {{"Out", {"z"}}});
}

proto::ProgramDesc FailingProgram() {
  proto::ProgramDesc p = NewProgram();
  AddFailingBlock(&p, 0);
  return p;
}

Tensor SomeX() { return MakeTensor<float>({1, 3}, {1, 2, 3}); }

// Runs FailingProgram with an executor of its own, as an op running a
// sub-program would.
void NestedKernel(const ExecutionContext& ctx) {
  Executor inner;
  Scope scope;
  inner.RunOnce(FailingProgram(), &scope, {{"x", ctx.Input("X")}});
}

REGISTER_OP(test_exec_nested)
    .Input("X")
    .Output("Out")
    .CPUKernel<float>(NestedKernel);

TEST(ExecutorOpContext, NamesTheFailingOpAndKeepsCodeAndErrno) {
  Executor exe;
  Scope scope;
  Error e = testing::ErrorThrownBy([&] {
    exe.RunOnce(FailingProgram(), &scope, {{"x", SomeX()}});
  });
  ASSERT_NE(e.op_context(), nullptr) << e.what();
  EXPECT_EQ(e.op_context()->type, "test_exec_fail");
  EXPECT_EQ(e.op_context()->index, 1);
  EXPECT_EQ(e.op_context()->block_id, 0);
  EXPECT_EQ(e.code(), ErrorCode::kIO);
  EXPECT_EQ(e.os_errno(), EACCES);
  EXPECT_EQ(std::string(e.what()), "in op 'test_exec_fail' (#1): boom");
}

TEST(ExecutorOpContext, ShapeInferenceErrorsNameTheOpToo) {
  Executor exe;
  Scope scope;
  auto prepared = exe.Prepare(MulProgram(), &scope);
  Error e = testing::ErrorThrownBy([&] {
    exe.Run(prepared.get(), {{"x", SomeX()}});
  });
  ASSERT_NE(e.op_context(), nullptr) << e.what();
  EXPECT_EQ(e.op_context()->type, "mul");
  EXPECT_EQ(e.op_context()->index, 0);
  EXPECT_EQ(std::string(e.what()),
            "in op 'mul' (#0): variable 'w' (input Y) holds no value: feed "
            "it, or run the startup program first");
}

TEST(ExecutorOpContext, ANestedExecutorsOpIsNamedOnce) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "x", DataType::kFloat32, Shape{-1, 3});
  AddVarDesc(b, "out", DataType::kFloat32, Shape{-1, 3});
  *b->add_ops() =
      MakeOp("test_exec_nested", {{"X", {"x"}}}, {{"Out", {"out"}}});
  Executor exe;
  Scope scope;
  Error e = testing::ErrorThrownBy([&] {
    exe.RunOnce(p, &scope, {{"x", SomeX()}});
  });
  // The inner executor's op, not the outer one (op #0, test_exec_nested).
  ASSERT_NE(e.op_context(), nullptr) << e.what();
  EXPECT_EQ(e.op_context()->type, "test_exec_fail");
  EXPECT_EQ(e.op_context()->index, 1);
  EXPECT_EQ(e.os_errno(), EACCES);
  EXPECT_EQ(std::string(e.what()), "in op 'test_exec_fail' (#1): boom");
}

TEST(ExecutorOpContext, NamesTheBlockOfAnotherBlock) {
  proto::ProgramDesc p = MulProgram();
  AddFailingBlock(&p, 1);
  Executor exe;
  Scope scope;
  auto prepared = exe.Prepare(p, &scope, 1);
  Error e = testing::ErrorThrownBy([&] {
    exe.Run(prepared.get(), {{"x", SomeX()}});
  });
  ASSERT_NE(e.op_context(), nullptr) << e.what();
  EXPECT_EQ(e.op_context()->index, 1);
  EXPECT_EQ(e.op_context()->block_id, 1);
  EXPECT_EQ(std::string(e.what()),
            "in op 'test_exec_fail' (#1 of block 1): boom");
}

TEST(ExecutorOpContext, SurvivesARethrow) {
  Executor exe;
  Scope scope;
  Error e = testing::ErrorThrownBy([&] {
    try {
      exe.RunOnce(FailingProgram(), &scope, {{"x", SomeX()}});
    } catch (const Error& cause) {
      FLUID_RETHROW(cause, "step 3: ", cause.what());
    }
  });
  ASSERT_NE(e.op_context(), nullptr) << e.what();
  EXPECT_EQ(e.op_context()->type, "test_exec_fail");
  EXPECT_EQ(e.op_context()->index, 1);
  EXPECT_EQ(e.code(), ErrorCode::kIO);
  EXPECT_EQ(e.os_errno(), EACCES);
  EXPECT_EQ(std::string(e.what()), "step 3: in op 'test_exec_fail' (#1): boom");
}

TEST_F(ExecutorTest, ErrorsOutsideOpsHaveNoOpContext) {
  EXPECT_EQ(testing::ErrorThrownBy([&] {
              exe_.Run(prepared_.get(), {}, {"y"}, nullptr);
            }).op_context(),
            nullptr);
  std::vector<Tensor> out;
  EXPECT_EQ(testing::ErrorThrownBy([&] {
              exe_.Run(prepared_.get(), {{"x", SomeX()}}, {"qq"}, &out);
            }).op_context(),
            nullptr);
  proto::ProgramDesc p = MulProgram();
  SetOpInput(p.mutable_blocks(0)->mutable_ops(0), "Y", {"ghost"});
  EXPECT_EQ(
      testing::ErrorThrownBy([&] { exe_.Prepare(p, &scope_); }).op_context(),
      nullptr);
}

}  // namespace
}  // namespace fluid

namespace fluid {
namespace {

// The scope's fence: a writer's in-flight writes are waited for by every
// other reader (a program prepared or run on the scope, by anyone but the
// writer's own program), once, and by the scope's end.
TEST_F(ExecutorTest, ReadersPassTheScopesFenceButTheWritersOwnProgram) {
  int writer = 0;  // its address is the writer's key
  int waits = 0;
  const FeedList feed = {{"x", MakeTensor<float>({1, 3}, {1, 1, 1})}};
  prepared_->set_fence_owner(&writer);
  scope_.SetFence(&writer, [&waits] { ++waits; });
  exe_.Run(prepared_.get(), feed);  // the writer's own program
  EXPECT_EQ(waits, 0);
  auto other = exe_.Prepare(MulProgram(), &scope_);  // another reader
  EXPECT_EQ(waits, 1);
  scope_.SetFence(&writer, [&waits] { ++waits; });
  exe_.Run(other.get(), feed);
  EXPECT_EQ(waits, 2);
  exe_.Run(other.get(), feed);  // waited for already
  EXPECT_EQ(waits, 2);
  scope_.SetFence(&writer, [&waits] { ++waits; });
  scope_.NewScope().Settle();  // a kid settles its root's fence
  EXPECT_EQ(waits, 3);
  {
    Scope ending;
    ending.SetFence(&writer, [&waits] { ++waits; });
  }
  EXPECT_EQ(waits, 4);  // a scope ends only after its writes
  scope_.SetFence(&writer, [&waits] { ++waits; });
  scope_.ClearFence(&writer);
  scope_.Settle();
  EXPECT_EQ(waits, 4);
}

}  // namespace
}  // namespace fluid
