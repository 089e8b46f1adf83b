#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/backward.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::BroadcastCase;
using testing::BroadcastCases;
using testing::BroadcastIndex;
using testing::CheckGradient;
using testing::ElementwiseOp;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc Mul(int axis) { return ElementwiseOp("elementwise_mul", axis); }

TEST(ElementwiseMulOp, ForwardMatchesNaive) {
  uint64_t seed = 1;
  for (const BroadcastCase& c : BroadcastCases()) {
    Tensor x = RandomTensor<double>(c.x, -1, 1, seed++);
    Tensor y = RandomTensor<double>(c.y, -1, 1, seed++);
    Tensor out = RunOp(Mul(c.axis), {{"x", x}, {"y", y}})["out"];
    ASSERT_EQ(out.shape(), c.x);
    auto xv = ToVector<double>(x), yv = ToVector<double>(y);
    auto got = ToVector<double>(out);
    auto yi = BroadcastIndex(c.x, c.y, c.axis);
    for (size_t i = 0; i < xv.size(); ++i)
      ASSERT_EQ(got[i], xv[i] * yv[yi[i]])
          << c.x << " * " << c.y << " axis " << c.axis << " at " << i;
  }
}

TEST(ElementwiseMulOp, Gradient) {
  uint64_t seed = 50;
  for (const BroadcastCase& c : BroadcastCases()) {
    EXPECT_TRUE(CheckGradient(
        Mul(c.axis), {{"x", RandomTensor<double>(c.x, -1, 1, seed)},
                      {"y", RandomTensor<double>(c.y, -1, 1, seed + 1)}}))
        << c.x << " * " << c.y << " axis " << c.axis;
    seed += 2;
  }
}

TEST(ElementwiseMulOp, OnlyYGradient) {
  testing::GradCheckOptions opt;
  opt.wrt = {"y"};
  EXPECT_TRUE(CheckGradient(Mul(1),
                            {{"x", RandomTensor<double>({2, 3, 4}, -1, 1, 3)},
                             {"y", RandomTensor<double>({3}, -1, 1, 4)}},
                            opt));
}

// Tensors big enough for the pool: every parallel path, forward and grad,
// against the naive result.
TEST(ElementwiseMulOp, ThreadedMatchesNaive) {
  for (const BroadcastCase& c :
       std::vector<BroadcastCase>{{{300, 200}, {200}, -1},
                                  {{8, 16, 32, 32}, {16}, 1},
                                  {{70000}, {70000}, -1},
                                  {{300, 200}, {300, 1}, 0},
                                  {{70000, 2}, {1}, -1}}) {
    Tensor x = RandomTensor<double>(c.x, -1, 1, 11);
    Tensor y = RandomTensor<double>(c.y, -1, 1, 12);
    Tensor g = RandomTensor<double>(c.x, -1, 1, 13);
    auto xv = ToVector<double>(x), yv = ToVector<double>(y);
    auto gv = ToVector<double>(g);
    auto yi = BroadcastIndex(c.x, c.y, c.axis);
    Tensor out = RunOp(Mul(c.axis), {{"x", x}, {"y", y}}, 4)["out"];
    auto got = ToVector<double>(out);
    for (size_t i = 0; i < xv.size(); ++i)
      ASSERT_EQ(got[i], xv[i] * yv[yi[i]]) << c.x << " at " << i;

    auto grad =
        MakeOp("elementwise_mul_grad",
               {{"X", {"x"}}, {"Y", {"y"}}, {"Out@GRAD", {"g"}}},
               {{"X@GRAD", {"dx"}}, {"Y@GRAD", {"dy"}}}, {{"axis", c.axis}});
    auto res = RunOp(grad, {{"x", x}, {"y", y}, {"g", g}}, 4);
    std::vector<double> want_dy(yv.size(), 0.0);
    for (size_t i = 0; i < gv.size(); ++i) want_dy[yi[i]] += gv[i] * xv[i];
    auto dx = ToVector<double>(res["dx"]);
    ASSERT_EQ(dx.size(), gv.size());
    for (size_t i = 0; i < gv.size(); ++i)
      ASSERT_EQ(dx[i], gv[i] * yv[yi[i]]) << c.x << " dx at " << i;
    ASSERT_EQ(res["dy"].shape(), c.y);
    auto dy = ToVector<double>(res["dy"]);
    for (size_t j = 0; j < dy.size(); ++j)
      ASSERT_NEAR(dy[j], want_dy[j], 1e-9) << c.x << " dy at " << j;
  }
}

TEST(ElementwiseMulOp, FloatMatchesDouble) {
  for (const BroadcastCase& c : BroadcastCases()) {
    auto d = ToVector<double>(RunOp(
        Mul(c.axis), {{"x", RandomTensor<double>(c.x, -1, 1, 5)},
                      {"y", RandomTensor<double>(c.y, -1, 1, 6)}})["out"]);
    auto f = ToVector<float>(
        RunOp(Mul(c.axis), {{"x", RandomTensor<float>(c.x, -1, 1, 5)},
                            {"y", RandomTensor<float>(c.y, -1, 1, 6)}})["out"]);
    ASSERT_EQ(d.size(), f.size());
    for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-6);
  }
}

TEST(ElementwiseMulOp, CompileTimeUnknownDims) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "h", DataType::kFloat32, Shape({-1, 512}));
  AddVarDesc(block, "b", DataType::kFloat32, Shape({512}));
  AddVarDesc(block, "c", DataType::kFloat32, Shape({-1, 16, -1, -1}));
  AddVarDesc(block, "cb", DataType::kFloat32, Shape({16}));
  InferShapeAtCompileTime(
      MakeOp("elementwise_mul", {{"X", {"h"}}, {"Y", {"b"}}},
             {{"Out", {"o1"}}}),
      block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "o1")), Shape({-1, 512}));
  InferShapeAtCompileTime(
      MakeOp("elementwise_mul", {{"X", {"c"}}, {"Y", {"cb"}}},
             {{"Out", {"o2"}}}, {{"axis", 1}}),
      block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "o2")), Shape({-1, 16, -1, -1}));
  // A known mismatch is caught before anything runs.
  AddVarDesc(block, "bad", DataType::kFloat32, Shape({500}));
  try {
    InferShapeAtCompileTime(
        MakeOp("elementwise_mul", {{"X", {"h"}}, {"Y", {"bad"}}},
               {{"Out", {"o3"}}}),
        block);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'h'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'bad'"), std::string::npos) << msg;
  }
}

// X and Y the same var: both gradient contributions must arrive, which the
// autodiff does by renaming one and summing them with `sum`.
TEST(ElementwiseMulOp, SquareThroughAutodiff) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat64, Shape({2, 3}), true)
      ->set_trainable(true);
  auto sq = MakeOp("elementwise_mul", {{"X", {"x"}}, {"Y", {"x"}}},
                   {{"Out", {"sq"}}});
  *block->add_ops() = sq;
  InferShapeAtCompileTime(sq, block);
  auto mean = MakeOp("mean", {{"X", {"sq"}}}, {{"Out", {"loss"}}});
  *block->add_ops() = mean;
  InferShapeAtCompileTime(mean, block);
  AppendBackward(&program, "loss");
  Scope scope;
  Executor exe;
  Tensor x = RandomTensor<double>({2, 3}, -1, 1, 21);
  scope.Var("x")->GetMutableTensor()->CopyFrom(x);
  std::vector<Tensor> got;
  exe.RunOnce(program, &scope, {}, {"x@GRAD"}, &got);
  auto xv = ToVector<double>(x);
  auto gx = ToVector<double>(got[0]);
  ASSERT_EQ(gx.size(), xv.size());
  for (size_t i = 0; i < xv.size(); ++i)
    EXPECT_NEAR(gx[i], 2 * xv[i] / 6.0, 1e-12) << i;
}

using testing::ErrorOf;

TEST(ElementwiseMulOp, BadShapesNameVars) {
  auto op = [](int axis) {
    return MakeOp("elementwise_mul", {{"X", {"act"}}, {"Y", {"bias"}}},
                  {{"Out", {"o"}}}, {{"axis", axis}});
  };
  std::string msg =
      ErrorOf(op(-1), {{"act", RandomTensor<double>({2, 3}, -1, 1, 1)},
                       {"bias", RandomTensor<double>({4}, -1, 1, 1)}});
  EXPECT_NE(msg.find("act"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bias"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4]"), std::string::npos) << msg;

  // Y larger than X.
  msg = ErrorOf(op(-1), {{"act", RandomTensor<double>({3}, -1, 1, 1)},
                         {"bias", RandomTensor<double>({2, 3}, -1, 1, 1)}});
  EXPECT_NE(msg.find("more dims"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bias"), std::string::npos) << msg;

  // Axis too far right for Y's dims.
  msg = ErrorOf(op(2), {{"act", RandomTensor<double>({2, 3, 4}, -1, 1, 1)},
                        {"bias", RandomTensor<double>({4, 5}, -1, 1, 1)}});
  EXPECT_NE(msg.find("axis 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("act"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
