#include <gtest/gtest.h>

#include <string>
#include <vector>

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

proto::OpDesc Add(int axis) { return ElementwiseOp("elementwise_add", axis); }

TEST(ElementwiseAddOp, ForwardMatchesNaive) {
  uint64_t seed = 1;
  for (const BroadcastCase& c : BroadcastCases()) {
    Tensor x = RandomTensor<double>(c.x, -1, 1, seed++);
    Tensor y = RandomTensor<double>(c.y, -1, 1, seed++);
    Tensor out = RunOp(Add(c.axis), {{"x", x}, {"y", y}})["out"];
    ASSERT_EQ(out.shape(), c.x);
    auto xv = ToVector<double>(x), yv = ToVector<double>(y);
    auto got = ToVector<double>(out);
    auto yi = BroadcastIndex(c.x, c.y, c.axis);
    for (size_t i = 0; i < xv.size(); ++i)
      ASSERT_EQ(got[i], xv[i] + yv[yi[i]])
          << c.x << " + " << c.y << " axis " << c.axis << " at " << i;
  }
}

TEST(ElementwiseAddOp, Gradient) {
  uint64_t seed = 50;
  for (const BroadcastCase& c : BroadcastCases()) {
    EXPECT_TRUE(CheckGradient(
        Add(c.axis), {{"x", RandomTensor<double>(c.x, -1, 1, seed)},
                      {"y", RandomTensor<double>(c.y, -1, 1, seed + 1)}}))
        << c.x << " + " << c.y << " axis " << c.axis;
    seed += 2;
  }
}

TEST(ElementwiseAddOp, OnlyYGradient) {
  testing::GradCheckOptions opt;
  opt.wrt = {"y"};
  EXPECT_TRUE(CheckGradient(Add(1),
                            {{"x", RandomTensor<double>({2, 3, 4}, -1, 1, 3)},
                             {"y", RandomTensor<double>({3}, -1, 1, 4)}},
                            opt));
}

// Tensors big enough for the pool: every parallel path, forward and grad,
// against the naive result.
TEST(ElementwiseAddOp, ThreadedMatchesNaive) {
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
    Tensor out = RunOp(Add(c.axis), {{"x", x}, {"y", y}}, 4)["out"];
    auto got = ToVector<double>(out);
    for (size_t i = 0; i < xv.size(); ++i)
      ASSERT_EQ(got[i], xv[i] + yv[yi[i]]) << c.x << " at " << i;

    auto grad =
        MakeOp("elementwise_add_grad",
               {{"X", {"x"}}, {"Y", {"y"}}, {"Out@GRAD", {"g"}}},
               {{"X@GRAD", {"dx"}}, {"Y@GRAD", {"dy"}}}, {{"axis", c.axis}});
    auto res = RunOp(grad, {{"x", x}, {"y", y}, {"g", g}}, 4);
    std::vector<double> want_dy(yv.size(), 0.0);
    for (size_t i = 0; i < gv.size(); ++i) want_dy[yi[i]] += gv[i];
    EXPECT_EQ(ToVector<double>(res["dx"]), gv);
    ASSERT_EQ(res["dy"].shape(), c.y);
    auto dy = ToVector<double>(res["dy"]);
    for (size_t j = 0; j < dy.size(); ++j)
      ASSERT_NEAR(dy[j], want_dy[j], 1e-9) << c.x << " dy at " << j;
  }
}

TEST(ElementwiseAddOp, FloatMatchesDouble) {
  for (const BroadcastCase& c : BroadcastCases()) {
    auto d = ToVector<double>(RunOp(
        Add(c.axis), {{"x", RandomTensor<double>(c.x, -1, 1, 5)},
                      {"y", RandomTensor<double>(c.y, -1, 1, 6)}})["out"]);
    auto f = ToVector<float>(
        RunOp(Add(c.axis), {{"x", RandomTensor<float>(c.x, -1, 1, 5)},
                            {"y", RandomTensor<float>(c.y, -1, 1, 6)}})["out"]);
    ASSERT_EQ(d.size(), f.size());
    for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-6);
  }
}

TEST(ElementwiseAddOp, CompileTimeUnknownDims) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "h", DataType::kFloat32, Shape({-1, 512}));
  AddVarDesc(block, "b", DataType::kFloat32, Shape({512}));
  AddVarDesc(block, "c", DataType::kFloat32, Shape({-1, 16, -1, -1}));
  AddVarDesc(block, "cb", DataType::kFloat32, Shape({16}));
  InferShapeAtCompileTime(
      MakeOp("elementwise_add", {{"X", {"h"}}, {"Y", {"b"}}},
             {{"Out", {"o1"}}}),
      block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "o1")), Shape({-1, 512}));
  InferShapeAtCompileTime(
      MakeOp("elementwise_add", {{"X", {"c"}}, {"Y", {"cb"}}},
             {{"Out", {"o2"}}}, {{"axis", 1}}),
      block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "o2")), Shape({-1, 16, -1, -1}));
  // A known mismatch is caught before anything runs.
  AddVarDesc(block, "bad", DataType::kFloat32, Shape({500}));
  try {
    InferShapeAtCompileTime(
        MakeOp("elementwise_add", {{"X", {"h"}}, {"Y", {"bad"}}},
               {{"Out", {"o3"}}}),
        block);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'h'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'bad'"), std::string::npos) << msg;
  }
}

using testing::ErrorOf;

TEST(ElementwiseAddOp, BadShapesNameVars) {
  auto op = [](int axis) {
    return MakeOp("elementwise_add", {{"X", {"act"}}, {"Y", {"bias"}}},
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
