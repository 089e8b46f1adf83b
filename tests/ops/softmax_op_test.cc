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

proto::OpDesc SoftmaxAxis(int axis) {
  return MakeOp("softmax", {{"X", {"x"}}}, {{"Out", {"out"}}},
                {{"axis", int32_t{axis}}});
}

// Softmax over dim `axis` of x, each slice gathered with its stride, in
// long double.
std::vector<double> NaiveSoftmaxAxis(const Tensor& x, int axis) {
  const Shape& s = x.shape();
  const int64_t n = s[axis], inner = s.Product(axis + 1, s.rank());
  const auto v = ToVector<double>(x);
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < x.numel() / (n * inner); ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      long double mx = v[base], sum = 0;
      for (int64_t j = 0; j < n; ++j)
        mx = std::max<long double>(mx, v[base + j * inner]);
      for (int64_t j = 0; j < n; ++j) sum += std::exp(v[base + j * inner] - mx);
      for (int64_t j = 0; j < n; ++j)
        out[base + j * inner] =
            static_cast<double>(std::exp(v[base + j * inner] - mx) / sum);
    }
  }
  return out;
}

TEST(SoftmaxOp, AnyAxisMatchesNaive) {
  const Shape s({2, 3, 4, 5});
  uint64_t seed = 40;
  for (int axis = -4; axis < 4; ++axis) {
    Tensor x = RandomTensor<double>(s, -4, 4, seed++);
    auto got = ToVector<double>(RunOp(SoftmaxAxis(axis), {{"x", x}})["out"]);
    auto want = NaiveSoftmaxAxis(x, axis < 0 ? axis + 4 : axis);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-14) << "axis=" << axis << " at " << i;
  }
  // Threaded, strided.
  Tensor x = RandomTensor<double>({30, 50, 200}, -4, 4, seed++);
  auto got = ToVector<double>(RunOp(SoftmaxAxis(1), {{"x", x}}, 4)["out"]);
  auto want = NaiveSoftmaxAxis(x, 1);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-14);
}

TEST(SoftmaxOp, AnyAxisGradient) {
  uint64_t seed = 60;
  for (int axis : {0, 1, 2, -1}) {
    EXPECT_TRUE(
        CheckGradient(SoftmaxAxis(axis),
                      {{"x", RandomTensor<double>({2, 3, 4}, -2, 2, seed++)}}))
        << "axis=" << axis;
  }
}

// An additive mask (-1e9 where masked, 0 elsewhere), as attention adds to
// its scores: masked entries come out exactly 0, and a row masked
// everywhere comes out finite (the softmax of what remains), never NaN.
template <typename T>
void CheckAdditiveMask() {
  const T big = static_cast<T>(-1e9);
  // Row 0: causal row (last two masked); row 1: everything masked.
  Tensor x = MakeTensor<T>({2, 4}, {T(0.5), T(-1), big + T(2), big + T(0.3),
                                    big + T(1), big - T(2), big, big + T(0.5)});
  auto got = ToVector<T>(RunOp(Softmax(), {{"x", x}})["out"]);
  EXPECT_EQ(got[2], T(0));
  EXPECT_EQ(got[3], T(0));
  EXPECT_NEAR(got[0] + got[1], 1.0, 1e-6);
  double sum = 0;
  for (int j = 4; j < 8; ++j) {
    ASSERT_TRUE(std::isfinite(got[j])) << j;
    sum += got[j];
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);
  // The gradient through masked entries is exactly 0 as well.
  auto grad = MakeOp("softmax_grad", {{"Out", {"y"}}, {"Out@GRAD", {"g"}}},
                     {{"X@GRAD", {"dx"}}});
  Tensor y = RunOp(Softmax(), {{"x", x}})["out"];
  auto dx = ToVector<T>(
      RunOp(grad, {{"y", y}, {"g", RandomTensor<T>({2, 4}, -1, 1, 3)}})["dx"]);
  EXPECT_EQ(dx[2], T(0));
  EXPECT_EQ(dx[3], T(0));
  for (T v : dx) EXPECT_TRUE(std::isfinite(v));
}

TEST(SoftmaxOp, AdditiveMaskGivesExactZerosAndNoNaN) {
  CheckAdditiveMask<float>();
  CheckAdditiveMask<double>();
}

TEST(SoftmaxOp, AxisOutOfRangeNamesVar) {
  std::string msg =
      testing::ErrorOf(MakeOp("softmax", {{"X", {"scores"}}}, {{"Out", {"o"}}},
                              {{"axis", int32_t{3}}}),
                       {{"scores", RandomTensor<double>({2, 3}, -1, 1, 1)}});
  EXPECT_NE(msg.find("scores"), std::string::npos) << msg;
  EXPECT_NE(msg.find("axis=3"), std::string::npos) << msg;
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
