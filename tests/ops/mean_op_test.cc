#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc Mean() {
  return MakeOp("mean", {{"X", {"x"}}}, {{"Out", {"out"}}});
}

TEST(MeanOp, ForwardMatchesNaive) {
  uint64_t seed = 1;
  for (Shape s : {Shape({1}), Shape({7}), Shape({3, 5}), Shape({2, 1, 9}),
                  Shape({100, 333})}) {
    Tensor x = RandomTensor<double>(s, -2, 3, seed++);
    Tensor out = RunOp(Mean(), {{"x", x}})["out"];
    ASSERT_EQ(out.shape(), Shape({1}));
    double sum = 0;
    for (double v : ToVector<double>(x)) sum += v;
    EXPECT_NEAR(out.data<double>()[0], sum / x.numel(), 1e-13) << s;
  }
  Tensor exact = MakeTensor<double>({2, 2}, {1, 2, 3, 6});
  EXPECT_EQ(RunOp(Mean(), {{"x", exact}})["out"].data<double>()[0], 3.0);
}

TEST(MeanOp, FloatMatchesDouble) {
  // A large float input: the double accumulator keeps it accurate.
  auto d =
      RunOp(Mean(), {{"x", RandomTensor<double>({1000, 1000}, 0, 1, 2)}})["out"]
          .data<double>()[0];
  auto f =
      RunOp(Mean(), {{"x", RandomTensor<float>({1000, 1000}, 0, 1, 2)}})["out"]
          .data<float>()[0];
  EXPECT_NEAR(f, d, 1e-6);
}

TEST(MeanOp, Gradient) {
  uint64_t seed = 10;
  for (Shape s : {Shape({1}), Shape({4}), Shape({3, 5}), Shape({2, 1, 3})})
    EXPECT_TRUE(
        CheckGradient(Mean(), {{"x", RandomTensor<double>(s, -1, 1, seed++)}}))
        << s;
}

TEST(MeanOp, GradSpreadsEvenly) {
  auto grad = MakeOp("mean_grad", {{"X", {"x"}}, {"Out@GRAD", {"g"}}},
                     {{"X@GRAD", {"dx"}}});
  Tensor x = RandomTensor<double>({300, 250}, -1, 1, 3);
  auto dx =
      RunOp(grad, {{"x", x}, {"g", MakeTensor<double>({1}, {3.0})}}, 4)["dx"];
  ASSERT_EQ(dx.shape(), x.shape());
  for (double v : ToVector<double>(dx)) ASSERT_EQ(v, 3.0 / 75000);
}

TEST(MeanOp, CompileTimeUnknownBatch) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "loss_vec", DataType::kFloat32, Shape({-1, 1}));
  InferShapeAtCompileTime(
      MakeOp("mean", {{"X", {"loss_vec"}}}, {{"Out", {"loss"}}}), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "loss")), Shape({1}));
}

TEST(MeanOp, BadShapesNameVars) {
  try {
    RunOp(MakeOp("mean", {{"X", {"empty_in"}}}, {{"Out", {"o"}}}),
          {{"empty_in", RandomTensor<double>({0, 3}, -1, 1, 1)}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("empty_in"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[0, 3]"), std::string::npos) << msg;
  }
  try {
    RunOp(MakeOp("mean_grad", {{"X", {"x"}}, {"Out@GRAD", {"wide_g"}}},
                 {{"X@GRAD", {"dx"}}}),
          {{"x", RandomTensor<double>({3}, -1, 1, 1)},
           {"wide_g", RandomTensor<double>({2}, -1, 1, 1)}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("wide_g"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fluid
