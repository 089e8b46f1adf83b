// conditional_block and conditional_block_grad: a program with two blocks
// (y = tanh(x w) when the flag holds, y = 2 x w otherwise) against each
// branch written without control flow (forward, and the gradients of w and
// x, float64, both branches taken); numeric gradients; split_lod_tensor and
// merge_lod_tensor against a loop over the rows, and their gradient; and
// the errors.
#include <gtest/gtest.h>

#include "src/framework/backward.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::ToVector;

const Shape kX{2, 3};

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

void CommonVars(proto::BlockDesc* b) {
  Var(b, "x", DataType::kFloat64, kX);
  proto::VarDesc* w = AddVarDesc(b, "w", DataType::kFloat64, {3, 3}, true);
  w->set_trainable(true);
}

proto::BlockDesc* AddBlock(proto::ProgramDesc* p) {
  proto::BlockDesc* b = p->add_blocks();
  b->set_idx(p->blocks_size() - 1);
  b->set_parent_idx(0);
  return b;
}

// if flag: y = tanh(x w) else: y = 2 x w. loss = mean(y).
proto::ProgramDesc CondProgram() {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  CommonVars(b);
  Var(b, "flag", DataType::kBool, {1}, true);
  Var(b, "not_flag", DataType::kBool, {1}, true);
  Var(b, "y", DataType::kFloat64, kX);
  Var(b, "scope_t", DataType::kFloat32, {1}, true);
  Var(b, "scope_f", DataType::kFloat32, {1}, true);
  Op(b, MakeOp("logical_not", {{"X", {"flag"}}}, {{"Out", {"not_flag"}}}));
  proto::BlockDesc* t = AddBlock(&p);
  Var(t, "t1", DataType::kFloat64, kX);
  Op(t, MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"t1"}}}), false);
  Op(t, MakeOp("tanh", {{"X", {"t1"}}}, {{"Out", {"y"}}}), false);
  proto::BlockDesc* f = AddBlock(&p);
  Var(f, "f1", DataType::kFloat64, kX);
  Op(f, MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"f1"}}}), false);
  Op(f, MakeOp("scale", {{"X", {"f1"}}}, {{"Out", {"y"}}}, {{"scale", 2.0f}}),
     false);
  b = p.mutable_blocks(0);
  for (int k : {0, 1})
    Op(b,
       MakeOp("conditional_block",
              {{"Cond", {k == 0 ? "flag" : "not_flag"}}, {"Input", {"x", "w"}}},
              {{"Out", {"y"}}, {"Scope", {k == 0 ? "scope_t" : "scope_f"}}},
              {{"sub_block", k + 1}, {"is_scalar_condition", true}}));
  Var(b, "loss", DataType::kFloat64, {1});
  Op(b, MakeOp("mean", {{"X", {"y"}}}, {{"Out", {"loss"}}}));
  return p;
}

// One branch without control flow (the flag fed, unread).
proto::ProgramDesc PlainProgram(bool taken) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  CommonVars(b);
  Var(b, "flag", DataType::kBool, {1}, true);
  Op(b, MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"t1"}}}));
  if (taken) {
    Op(b, MakeOp("tanh", {{"X", {"t1"}}}, {{"Out", {"y"}}}));
  } else {
    Op(b,
       MakeOp("scale", {{"X", {"t1"}}}, {{"Out", {"y"}}}, {{"scale", 2.0f}}));
  }
  Op(b, MakeOp("mean", {{"X", {"y"}}}, {{"Out", {"loss"}}}));
  return p;
}

struct Inputs {
  Tensor x = RandomTensor<double>(kX, -1, 1, 41);
  Tensor w = RandomTensor<double>({3, 3}, -1, 1, 42);
};

std::vector<Tensor> RunCond(const proto::ProgramDesc& p, const Inputs& in,
                            bool flag, const std::vector<std::string>& fetch) {
  Executor exe;
  Scope scope;
  scope.Var("w")->GetMutableTensor()->CopyFrom(in.w);
  std::vector<Tensor> out;
  Tensor f = MakeTensor<bool>({1}, {flag});
  exe.RunOnce(p, &scope, {{"x", in.x}, {"flag", f}}, fetch, &out);
  return out;
}

void ExpectClose(const Tensor& a, const Tensor& b, const std::string& what) {
  auto va = ToVector<double>(a), vb = ToVector<double>(b);
  ASSERT_EQ(va.size(), vb.size()) << what;
  for (size_t i = 0; i < va.size(); ++i)
    EXPECT_NEAR(va[i], vb[i], 1e-10) << what << "[" << i << "]";
}

TEST(ConditionalBlockOp, BothBranchesMatchPlainForwardAndGradients) {
  proto::ProgramDesc cond = CondProgram();
  ParamGradList pairs = AppendBackward(&cond, "loss");
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].first, "w");
  Inputs in;
  for (bool flag : {true, false}) {
    proto::ProgramDesc plain = PlainProgram(flag);
    AppendBackward(&plain, "loss");
    auto a = RunCond(cond, in, flag, {"loss", "y", "w@GRAD", "x@GRAD"});
    auto b = RunCond(plain, in, flag, {"loss", "y", "w@GRAD", "x@GRAD"});
    const std::string tag = flag ? " (true)" : " (false)";
    ExpectClose(a[0], b[0], "loss" + tag);
    ExpectClose(a[1], b[1], "y" + tag);
    ExpectClose(a[2], b[2], "w@GRAD" + tag);
    ExpectClose(a[3], b[3], "x@GRAD" + tag);
  }
}

TEST(ConditionalBlockOp, NumericGradient) {
  proto::ProgramDesc fwd = CondProgram(), train = CondProgram();
  AppendBackward(&train, "loss");
  Inputs in;
  for (bool flag : {true, false}) {
    const Tensor analytic = RunCond(train, in, flag, {"w@GRAD"})[0];
    auto w = ToVector<double>(in.w);
    const double eps = 1e-6;
    for (size_t k = 0; k < w.size(); ++k) {
      Inputs plus = in, minus = in;
      auto wp = w, wm = w;
      wp[k] += eps;
      wm[k] -= eps;
      plus.w = MakeTensor<double>({3, 3}, wp);
      minus.w = MakeTensor<double>({3, 3}, wm);
      const double lp =
          ToVector<double>(RunCond(fwd, plus, flag, {"loss"})[0])[0];
      const double lm =
          ToVector<double>(RunCond(fwd, minus, flag, {"loss"})[0])[0];
      EXPECT_NEAR(ToVector<double>(analytic)[k], (lp - lm) / (2 * eps), 1e-7)
          << "w[" << k << "] flag " << flag;
    }
  }
}

TEST(ConditionalBlockOp, ScalarConditionMustBeOneBool) {
  proto::ProgramDesc p = CondProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  const std::string err = ErrorOf([&] {
    Op(b, MakeOp("conditional_block", {{"Cond", {"x"}}, {"Input", {"x"}}},
                 {{"Out", {"y"}}},
                 {{"sub_block", 1}, {"is_scalar_condition", true}}));
  });
  EXPECT_NE(err.find("conditional_block: Cond 'x' is float64"),
            std::string::npos)
      << err;
}

TEST(ConditionalBlockOp, ReadingAndWritingAVarOnThePathIsRefused) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  CommonVars(b);
  Var(b, "flag", DataType::kBool, {1}, true);
  Var(b, "h", DataType::kFloat64, kX);
  Var(b, "s", DataType::kFloat32, {1}, true);
  Op(b, MakeOp("assign", {{"X", {"x"}}}, {{"Out", {"h"}}}));
  proto::BlockDesc* t = AddBlock(&p);
  Var(t, "t1", DataType::kFloat64, kX);
  Op(t, MakeOp("mul", {{"X", {"h"}}, {"Y", {"w"}}}, {{"Out", {"t1"}}}), false);
  Op(t, MakeOp("tanh", {{"X", {"t1"}}}, {{"Out", {"h"}}}), false);
  b = p.mutable_blocks(0);
  Op(b, MakeOp("conditional_block", {{"Cond", {"flag"}}, {"Input", {"h", "w"}}},
               {{"Out", {"h"}}, {"Scope", {"s"}}},
               {{"sub_block", 1}, {"is_scalar_condition", true}}));
  Op(b, MakeOp("mean", {{"X", {"h"}}}, {{"Out", {"loss"}}}));
  const std::string err = ErrorOf([&] { AppendBackward(&p, "loss"); });
  EXPECT_NE(err.find("reads and writes outer var 'h'"), std::string::npos)
      << err;
}

// ---- split_lod_tensor and merge_lod_tensor ----

// y = merge(mask, 3 * split_true(x), -split_false(x)); loss = sum(y * r).
proto::ProgramDesc SplitMergeProgram() {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  Var(b, "x", DataType::kFloat64, {5, 2});
  Var(b, "mask", DataType::kBool, {5, 1}, true);
  Op(b, MakeOp("split_lod_tensor", {{"X", {"x"}}, {"Mask", {"mask"}}},
               {{"OutTrue", {"xt"}}, {"OutFalse", {"xf"}}}));
  Op(b, MakeOp("scale", {{"X", {"xt"}}}, {{"Out", {"yt"}}}, {{"scale", 3.0f}}));
  Op(b,
     MakeOp("scale", {{"X", {"xf"}}}, {{"Out", {"yf"}}}, {{"scale", -1.0f}}));
  Op(b, MakeOp("merge_lod_tensor",
               {{"X", {"x"}},
                {"Mask", {"mask"}},
                {"InTrue", {"yt"}},
                {"InFalse", {"yf"}}},
               {{"Out", {"y"}}}));
  Op(b, MakeOp("mean", {{"X", {"y"}}}, {{"Out", {"loss"}}}));
  return p;
}

TEST(SplitMergeLoDTensor, RowsGoBackInOrderAndGradientIsParted) {
  const std::vector<bool> mask = {true, false, false, true, true};
  Tensor x = RandomTensor<double>({5, 2}, -1, 1, 43);
  Tensor m = MakeTensor<bool>({5, 1}, mask);
  proto::ProgramDesc p = SplitMergeProgram();
  AppendBackward(&p, "loss");
  Executor exe;
  Scope scope;
  std::vector<Tensor> out;
  exe.RunOnce(p, &scope, {{"x", x}, {"mask", m}}, {"xt", "xf", "y", "x@GRAD"},
              &out);
  auto vx = ToVector<double>(x);
  std::vector<double> xt, xf, y, dx;
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 2; ++c) {
      const double v = vx[r * 2 + c];
      (mask[r] ? xt : xf).push_back(v);
      y.push_back(mask[r] ? 3 * v : -v);
      dx.push_back((mask[r] ? 3.0 : -1.0) / 10);
    }
  }
  EXPECT_EQ(out[0].shape(), Shape({3, 2}));
  EXPECT_EQ(out[1].shape(), Shape({2, 2}));
  EXPECT_EQ(ToVector<double>(out[0]), xt);
  EXPECT_EQ(ToVector<double>(out[1]), xf);
  EXPECT_EQ(ToVector<double>(out[2]), y);
  auto got = ToVector<double>(out[3]);
  ASSERT_EQ(got.size(), dx.size());
  for (size_t k = 0; k < dx.size(); ++k) EXPECT_NEAR(got[k], dx[k], 1e-12);
}

TEST(SplitMergeLoDTensor, AllRowsOnOneSide) {
  Tensor x = RandomTensor<double>({5, 2}, -1, 1, 44);
  Tensor m = MakeTensor<bool>({5, 1}, std::vector<bool>(5, true));
  proto::ProgramDesc p = SplitMergeProgram();
  AppendBackward(&p, "loss");
  Executor exe;
  Scope scope;
  std::vector<Tensor> out;
  exe.RunOnce(p, &scope, {{"x", x}, {"mask", m}}, {"xf", "y", "x@GRAD"}, &out);
  EXPECT_EQ(out[0].shape(), Shape({0, 2}));
  auto vx = ToVector<double>(x), vy = ToVector<double>(out[1]);
  for (size_t k = 0; k < vx.size(); ++k) EXPECT_EQ(vy[k], 3 * vx[k]);
  for (double g : ToVector<double>(out[2])) EXPECT_NEAR(g, 0.3, 1e-12);
}

TEST(SplitMergeLoDTensor, MaskErrors) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  Var(b, "x", DataType::kFloat64, {5, 2});
  Var(b, "m4", DataType::kBool, {4, 1});
  Var(b, "mf", DataType::kFloat32, {5, 1});
  std::string err = ErrorOf([&] {
    Op(b, MakeOp("split_lod_tensor", {{"X", {"x"}}, {"Mask", {"m4"}}},
                 {{"OutTrue", {"a"}}, {"OutFalse", {"b"}}}));
  });
  EXPECT_NE(err.find("Mask 'm4' has 4 rows but the batch has 5"),
            std::string::npos)
      << err;
  err = ErrorOf([&] {
    Op(b, MakeOp("split_lod_tensor", {{"X", {"x"}}, {"Mask", {"mf"}}},
                 {{"OutTrue", {"a"}}, {"OutFalse", {"b"}}}));
  });
  EXPECT_NE(err.find("Mask 'mf' is float32; it must be bool"),
            std::string::npos)
      << err;
  err = ErrorOf([&] {
    Op(b, MakeOp("split_lod_tensor", {{"X", {"x"}}, {"Mask", {"m4"}}},
                 {{"OutTrue", {"a"}}, {"OutFalse", {"b"}}}, {{"level", 1}}));
  });
  EXPECT_NE(err.find("attr level is 1"), std::string::npos) << err;
}

}  // namespace
}  // namespace fluid
