#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

proto::OpDesc Softmax() {
  return MakeOp("softmax", {{"X", {"x"}}}, {{"Out", {"out"}}});
}

// Row by row over the last dim, in long double.
std::vector<double> NaiveSoftmax(const Tensor& x) {
  const int64_t d = x.shape()[x.shape().rank() - 1];
  auto v = ToVector<double>(x);
  std::vector<double> out(v.size());
  for (size_t r = 0; r * d < v.size(); ++r) {
    long double mx = v[r * d], sum = 0;
    for (int64_t j = 0; j < d; ++j)
      mx = std::max<long double>(mx, v[r * d + j]);
    for (int64_t j = 0; j < d; ++j) sum += std::exp(v[r * d + j] - mx);
    for (int64_t j = 0; j < d; ++j)
      out[r * d + j] = static_cast<double>(std::exp(v[r * d + j] - mx) / sum);
  }
  return out;
}

const std::vector<Shape>& Shapes() {
  static const std::vector<Shape> shapes = {Shape({1}),       Shape({1, 1}),
                                            Shape({4, 1}),    Shape({3, 5}),
                                            Shape({2, 3, 7}), Shape({1, 10})};
  return shapes;
}

TEST(SoftmaxOp, ForwardMatchesNaive) {
  uint64_t seed = 1;
  for (const Shape& s : Shapes()) {
    Tensor x = RandomTensor<double>(s, -5, 5, seed++);
    Tensor out = RunOp(Softmax(), {{"x", x}})["out"];
    ASSERT_EQ(out.shape(), s);
    auto want = NaiveSoftmax(x);
    auto got = ToVector<double>(out);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-14) << s << " at " << i;
  }
}

TEST(SoftmaxOp, LargeLogitsDoNotOverflow) {
  Tensor x =
      MakeTensor<double>({2, 3}, {1000, 1001, 1002, -1000, -1001, -5000});
  auto got = ToVector<double>(RunOp(Softmax(), {{"x", x}})["out"]);
  auto want = NaiveSoftmax(x);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << i;
    EXPECT_NEAR(got[i], want[i], 1e-14) << i;
  }
  EXPECT_NEAR(got[0] + got[1] + got[2], 1.0, 1e-15);
}

TEST(SoftmaxOp, ThreadedMatchesNaive) {
  Tensor x = RandomTensor<double>({500, 129}, -5, 5, 2);
  auto got = ToVector<double>(RunOp(Softmax(), {{"x", x}}, 4)["out"]);
  auto want = NaiveSoftmax(x);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-14) << i;
}

TEST(SoftmaxOp, FloatMatchesDouble) {
  auto d = ToVector<double>(RunOp(
      Softmax(), {{"x", RandomTensor<double>({6, 33}, -8, 8, 3)}})["out"]);
  auto f = ToVector<float>(
      RunOp(Softmax(), {{"x", RandomTensor<float>({6, 33}, -8, 8, 3)}})["out"]);
  ASSERT_EQ(d.size(), f.size());
  for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-6);
}

TEST(SoftmaxOp, Gradient) {
  uint64_t seed = 10;
  for (const Shape& s : Shapes())
    EXPECT_TRUE(CheckGradient(Softmax(),
                              {{"x", RandomTensor<double>(s, -2, 2, seed++)}}))
        << s;
}

TEST(SoftmaxOp, GradMatchesFormula) {
  Tensor y = RunOp(Softmax(),
                   {{"x", RandomTensor<double>({300, 130}, -2, 2, 4)}})["out"];
  Tensor g = RandomTensor<double>({300, 130}, -1, 1, 5);
  auto grad = MakeOp("softmax_grad", {{"Out", {"y"}}, {"Out@GRAD", {"g"}}},
                     {{"X@GRAD", {"dx"}}});
  auto dx = ToVector<double>(RunOp(grad, {{"y", y}, {"g", g}}, 4)["dx"]);
  auto yv = ToVector<double>(y), gv = ToVector<double>(g);
  for (int r = 0; r < 300; ++r) {
    double dot = 0;
    for (int j = 0; j < 130; ++j) dot += gv[r * 130 + j] * yv[r * 130 + j];
    for (int j = 0; j < 130; ++j) {
      const int i = r * 130 + j;
      ASSERT_NEAR(dx[i], (gv[i] - dot) * yv[i], 1e-15) << i;
    }
  }
}

TEST(SoftmaxOp, CompileTimeUnknownBatch) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "logits", DataType::kFloat32, Shape({-1, 10}));
  InferShapeAtCompileTime(
      MakeOp("softmax", {{"X", {"logits"}}}, {{"Out", {"prob"}}}), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "prob")), Shape({-1, 10}));
}

TEST(SoftmaxOp, BadShapesNameVars) {
  try {
    RunOp(MakeOp("softmax", {{"X", {"scalar_in"}}}, {{"Out", {"o"}}}),
          {{"scalar_in", RandomTensor<double>(Shape(), -1, 1, 1)}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("scalar_in"), std::string::npos) << msg;
  }
  try {
    RunOp(MakeOp("softmax_grad", {{"Out", {"probs"}}, {"Out@GRAD", {"dprobs"}}},
                 {{"X@GRAD", {"dx"}}}),
          {{"probs", RandomTensor<double>({2, 3}, 0, 1, 1)},
           {"dprobs", RandomTensor<double>({2, 4}, -1, 1, 1)}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("probs"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dprobs"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 4]"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fluid
