// while and while_grad: a loop of T steps h = tanh(h W) with W shared
// against the same computation unrolled in one block (forward, and the
// gradients of W and of the input, in float64), the numeric gradient of a
// program with a loop, tensor arrays inside a loop, and the errors.
#include <gtest/gtest.h>

#include <cmath>

#include "src/framework/backward.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "src/framework/tensor_array.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::ToVector;

constexpr int kSteps = 5;
const Shape kH{2, 3};

proto::VarDesc* Var(proto::BlockDesc* b, const std::string& name, DataType d,
                    Shape s, bool stop_gradient = false) {
  proto::VarDesc* v = AddVarDesc(b, name, d, s);
  v->set_stop_gradient(stop_gradient);
  return v;
}

void Op(proto::BlockDesc* b, proto::OpDesc op, bool infer = true) {
  *b->add_ops() = op;
  if (infer) InferShapeAtCompileTime(op, b);
}

// Puts `op` at position `pos` of `b`'s ops.
void InsertOp(proto::BlockDesc* b, int pos, proto::OpDesc op) {
  *b->add_ops() = std::move(op);
  for (int k = b->ops_size() - 1; k > pos; --k)
    b->mutable_ops()->SwapElements(k, k - 1);
}

proto::OpDesc FillInt64(const std::string& out, int64_t value) {
  return MakeOp("fill_constant", {}, {{"Out", {out}}},
                {{"shape", std::vector<int64_t>{1}},
                 {"value", static_cast<float>(value)},
                 {"dtype", static_cast<int32_t>(DataType::kInt64)}});
}

// Block 0's vars both programs share: the input x and the parameter w.
void CommonVars(proto::BlockDesc* b) {
  Var(b, "x", DataType::kFloat64, kH);
  proto::VarDesc* w = AddVarDesc(b, "w", DataType::kFloat64, {3, 3}, true);
  w->set_trainable(true);
}

// h = x; while i < n: h = tanh(h w); i += 1. loss = mean(h).
proto::ProgramDesc LoopProgram(bool is_test = false) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  CommonVars(b);
  Var(b, "h", DataType::kFloat64, kH);
  Var(b, "i", DataType::kInt64, {1}, true);
  Var(b, "n", DataType::kInt64, {1}, true);
  Var(b, "cond", DataType::kBool, {1}, true);
  Var(b, "steps", DataType::kFloat32, {1}, true);
  Op(b, MakeOp("assign", {{"X", {"x"}}}, {{"Out", {"h"}}}));
  Op(b, FillInt64("i", 0));
  Op(b, FillInt64("n", kSteps));
  Op(b, MakeOp("less_than", {{"X", {"i"}}, {"Y", {"n"}}}, {{"Out", {"cond"}}}));
  proto::BlockDesc* body = p.add_blocks();
  body->set_idx(1);
  body->set_parent_idx(0);
  Var(body, "t1", DataType::kFloat64, kH);
  Var(body, "t2", DataType::kFloat64, kH);
  Op(body, MakeOp("mul", {{"X", {"h"}}, {"Y", {"w"}}}, {{"Out", {"t1"}}}),
     false);
  Op(body, MakeOp("tanh", {{"X", {"t1"}}}, {{"Out", {"t2"}}}), false);
  Op(body, MakeOp("assign", {{"X", {"t2"}}}, {{"Out", {"h"}}}), false);
  Op(body, MakeOp("increment", {{"X", {"i"}}}, {{"Out", {"i"}}}), false);
  Op(body,
     MakeOp("less_than", {{"X", {"i"}}, {"Y", {"n"}}}, {{"Out", {"cond"}}}),
     false);
  Op(b, MakeOp("while", {{"X", {"h", "w", "i", "n"}}, {"Condition", {"cond"}}},
               {{"Out", {"h", "i", "cond"}}, {"StepScopes", {"steps"}}},
               {{"sub_block", 1}, {"is_test", is_test}}));
  Var(b, "loss", DataType::kFloat64, {1});
  Op(b, MakeOp("mean", {{"X", {"h"}}}, {{"Out", {"loss"}}}));
  return p;
}

// The same computation unrolled: h0 = x, h{k+1} = tanh(h{k} w).
proto::ProgramDesc UnrolledProgram() {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  CommonVars(b);
  std::string h = "x";
  for (int k = 0; k < kSteps; ++k) {
    const std::string t = "t" + std::to_string(k), n = "h" + std::to_string(k);
    Op(b, MakeOp("mul", {{"X", {h}}, {"Y", {"w"}}}, {{"Out", {t}}}));
    Op(b, MakeOp("tanh", {{"X", {t}}}, {{"Out", {n}}}));
    h = n;
  }
  Op(b, MakeOp("mean", {{"X", {h}}}, {{"Out", {"loss"}}}));
  return p;
}

struct Inputs {
  Tensor x = RandomTensor<double>(kH, -1, 1, 31);
  Tensor w = RandomTensor<double>({3, 3}, -1, 1, 32);
};

std::vector<Tensor> RunProgram(const proto::ProgramDesc& p, const Inputs& in,
                               const std::vector<std::string>& fetch) {
  Executor exe;
  Scope scope;
  scope.Var("w")->GetMutableTensor()->CopyFrom(in.w);
  std::vector<Tensor> out;
  exe.RunOnce(p, &scope, {{"x", in.x}}, fetch, &out);
  return out;
}

void ExpectClose(const Tensor& a, const Tensor& b, const std::string& what) {
  auto va = ToVector<double>(a), vb = ToVector<double>(b);
  ASSERT_EQ(va.size(), vb.size()) << what;
  for (size_t i = 0; i < va.size(); ++i)
    EXPECT_NEAR(va[i], vb[i], 1e-10) << what << "[" << i << "]";
}

TEST(WhileOp, LoopMatchesUnrolledForwardAndGradients) {
  proto::ProgramDesc loop = LoopProgram(), unrolled = UnrolledProgram();
  ParamGradList loop_pairs = AppendBackward(&loop, "loss");
  ParamGradList unrolled_pairs = AppendBackward(&unrolled, "loss");
  ASSERT_EQ(loop_pairs.size(), 1u);
  EXPECT_EQ(loop_pairs[0].first, "w");
  // One writer of w@GRAD in block 0: while_grad, after the loop.
  int writers = 0;
  for (const auto& op : loop.blocks(0).ops())
    for (const auto& n : OpOutputNames(op)) writers += n == "w@GRAD";
  EXPECT_EQ(writers, 1);
  Inputs in;
  auto a = RunProgram(loop, in, {"loss", "w@GRAD", "x@GRAD", "h"});
  auto b = RunProgram(unrolled, in, {"loss", "w@GRAD", "x@GRAD", "h4"});
  ExpectClose(a[0], b[0], "loss");
  ExpectClose(a[1], b[1], "w@GRAD");
  ExpectClose(a[2], b[2], "x@GRAD");
  ExpectClose(a[3], b[3], "h");
}

TEST(WhileOp, NumericGradientOfLoop) {
  proto::ProgramDesc fwd = LoopProgram(), train = LoopProgram();
  AppendBackward(&train, "loss");
  Inputs in;
  const Tensor analytic = RunProgram(train, in, {"w@GRAD"})[0];
  auto w = ToVector<double>(in.w);
  const double eps = 1e-6;
  for (size_t k = 0; k < w.size(); ++k) {
    Inputs plus = in, minus = in;
    auto wp = w, wm = w;
    wp[k] += eps;
    wm[k] -= eps;
    plus.w = MakeTensor<double>({3, 3}, wp);
    minus.w = MakeTensor<double>({3, 3}, wm);
    const double lp = ToVector<double>(RunProgram(fwd, plus, {"loss"})[0])[0];
    const double lm = ToVector<double>(RunProgram(fwd, minus, {"loss"})[0])[0];
    EXPECT_NEAR(ToVector<double>(analytic)[k], (lp - lm) / (2 * eps), 1e-7)
        << "w[" << k << "]";
  }
}

TEST(WhileOp, TestModeRunsTheSameSteps) {
  Inputs in;
  auto a = RunProgram(LoopProgram(true), in, {"loss"});
  auto b = RunProgram(UnrolledProgram(), in, {"loss"});
  ExpectClose(a[0], b[0], "loss");
}

// Eager deletion: the outer vars the body reads are listed by the while
// op, so none is dropped before the loop has run.
TEST(WhileOp, OuterVarsLiveUntilTheLoopEnds) {
  proto::ProgramDesc p = LoopProgram(true);
  Executor exe;
  exe.set_eager_deletion(true);
  Scope scope;
  scope.Var("w")->GetMutableTensor()->CopyFrom(Inputs().w);
  auto prepared = exe.Prepare(p, &scope);
  int while_op = -1;
  for (int i = 0; i < p.blocks(0).ops_size(); ++i)
    if (p.blocks(0).ops(i).type() == "while") while_op = i;
  ASSERT_GT(while_op, 0);
  for (int i = 0; i < while_op; ++i)
    for (const std::string& name : prepared->ReleasedAfter(i))
      EXPECT_TRUE(name != "h" && name != "i" && name != "n")
          << name << " dropped after op #" << i << ", before the loop";
  std::vector<Tensor> out;
  exe.Run(prepared.get(), {{"x", Inputs().x}}, {"loss"}, &out);
  const auto want = RunProgram(UnrolledProgram(), Inputs(), {"loss"});
  ExpectClose(out[0], want[0], "loss");
}

// Blocks whose while ops run each other (a malformed program) are refused
// with an error, not run until the stack runs out.
TEST(WhileOp, BlocksRunningEachOtherAreRefused) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  Var(b, "i", DataType::kInt64, {1}, true);
  Var(b, "n", DataType::kInt64, {1}, true);
  Var(b, "cond", DataType::kBool, {1}, true);
  Op(b, FillInt64("i", 0));
  Op(b, FillInt64("n", 1));
  Op(b, MakeOp("less_than", {{"X", {"i"}}, {"Y", {"n"}}}, {{"Out", {"cond"}}}));
  auto loop = [](int sub) {
    return MakeOp("while", {{"X", {"i"}}, {"Condition", {"cond"}}},
                  {{"Out", {"i"}}}, {{"sub_block", sub}, {"is_test", true}});
  };
  Op(b, loop(1), false);
  for (int k : {1, 2}) {
    proto::BlockDesc* body = p.add_blocks();
    body->set_idx(k);
    body->set_parent_idx(0);
    Op(body, loop(k == 1 ? 2 : 1), false);
  }
  const std::string msg = ErrorOf([&] {
    Executor exe;
    Scope scope;
    exe.RunOnce(p, &scope);
  });
  EXPECT_NE(msg.find("in a cycle"), std::string::npos) << msg;
}

TEST(WhileOp, ConditionMustBeBool) {
  proto::ProgramDesc p = LoopProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  Var(b, "fcond", DataType::kFloat32, {1});
  proto::OpDesc bad = MakeOp("while", {{"X", {"h"}}, {"Condition", {"fcond"}}},
                             {{"Out", {"h"}}}, {{"sub_block", 1}});
  const std::string msg = ErrorOf([&] { InferShapeAtCompileTime(bad, b); });
  EXPECT_NE(msg.find("Condition 'fcond'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
}

// An array written in the loop and read after it: out = sum of the h's.
TEST(WhileOp, ArrayWrittenInLoopReadsBack) {
  proto::ProgramDesc p = LoopProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  proto::VarDesc* arr = Var(b, "arr", DataType::kFloat64, kH);
  arr->set_type(proto::VarDesc::LOD_TENSOR_ARRAY);
  // create_array before the loop; write h at i first in the body; read
  // slot 2 after the loop.
  InsertOp(b, 0,
           MakeOp("create_array", {}, {{"Out", {"arr"}}}, {{"dtype", 1}}));
  InsertOp(p.mutable_blocks(1), 0,
           MakeOp("write_to_array", {{"X", {"h"}}, {"I", {"i"}}},
                  {{"Out", {"arr"}}}));
  proto::OpDesc* w = b->mutable_ops(b->ops_size() - 2);
  ASSERT_EQ(w->type(), "while");
  SetOpOutput(w, "Out", {"h", "i", "cond", "arr"});
  Var(b, "two", DataType::kInt64, {1}, true);
  Var(b, "len", DataType::kInt64, {1}, true);
  Var(b, "slot2", DataType::kFloat64, kH);
  Op(b, FillInt64("two", 2));
  Op(b, MakeOp("read_from_array", {{"X", {"arr"}}, {"I", {"two"}}},
               {{"Out", {"slot2"}}}));
  Op(b, MakeOp("lod_array_length", {{"X", {"arr"}}}, {{"Out", {"len"}}}));
  Inputs in;
  auto out = RunProgram(p, in, {"slot2", "len"});
  // Slot 2 holds h as step 2 began: tanh(tanh(x w) w).
  auto u = RunProgram(UnrolledProgram(), in, {"h1"});
  ExpectClose(out[0], u[0], "slot2");
  EXPECT_EQ(ToVector<int64_t>(out[1]), std::vector<int64_t>{kSteps});
}

TEST(ArrayOps, ReadErrorsNameTheIndex) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  proto::VarDesc* arr = Var(b, "arr", DataType::kFloat32, {2});
  arr->set_type(proto::VarDesc::LOD_TENSOR_ARRAY);
  Var(b, "x", DataType::kFloat32, {2});
  Var(b, "i", DataType::kInt64, {1}, true);
  Var(b, "j", DataType::kInt64, {1}, true);
  Var(b, "y", DataType::kFloat32, {2});
  Op(b, MakeOp("create_array", {}, {{"Out", {"arr"}}}));
  Op(b, MakeOp("write_to_array", {{"X", {"x"}}, {"I", {"i"}}},
               {{"Out", {"arr"}}}));
  Op(b, MakeOp("read_from_array", {{"X", {"arr"}}, {"I", {"j"}}},
               {{"Out", {"y"}}}));
  auto run = [&](int64_t i, int64_t j) {
    return ErrorOf([&] {
      Executor exe;
      Scope scope;
      exe.RunOnce(p, &scope,
                  {{"x", MakeTensor<float>({2}, {1, 2})},
                   {"i", MakeTensor<int64_t>({1}, {i})},
                   {"j", MakeTensor<int64_t>({1}, {j})}},
                  {"y"}, nullptr);
    });
  };
  EXPECT_EQ(run(1, 1), "");
  std::string msg = run(1, 3);
  EXPECT_NE(msg.find("I is 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("holds 2 tensors"), std::string::npos) << msg;
  msg = run(1, 0);
  EXPECT_NE(msg.find("never written"), std::string::npos) << msg;
  msg = run(-1, 0);
  EXPECT_NE(msg.find(">= 0"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
