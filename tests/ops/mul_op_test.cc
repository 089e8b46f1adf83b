#include <gtest/gtest.h>

#include "src/framework/grad_op_maker.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/half_checks.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::TensorMap;

// Naive triple loop reference.
std::vector<double> NaiveMatMul(const std::vector<double>& a,
                                const std::vector<double>& b, int m, int k,
                                int n) {
  std::vector<double> c(m * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) c[i * n + j] += a[i * k + p] * b[p * n + j];
  return c;
}

TEST(MulOp, ForwardMatchesNaive) {
  for (auto dims : std::vector<std::array<int, 3>>{
           {1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {64, 128, 10}}) {
    int m = dims[0], k = dims[1], n = dims[2];
    Tensor x = RandomTensor<double>({m, k}, -1, 1, 1);
    Tensor y = RandomTensor<double>({k, n}, -1, 1, 2);
    auto out =
        RunOp(MakeOp("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}}),
              {{"x", x}, {"y", y}})["out"];
    ASSERT_EQ(out.shape(), Shape({m, n}));
    auto want = NaiveMatMul(testing::ToVector<double>(x),
                            testing::ToVector<double>(y), m, k, n);
    auto got = testing::ToVector<double>(out);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-12);
  }
}

TEST(MulOp, FlattensByNumColDims) {
  Tensor x = RandomTensor<double>({2, 3, 4}, -1, 1, 3);
  Tensor y = RandomTensor<double>({4, 5}, -1, 1, 4);
  auto out = RunOp(MakeOp("mul", {{"X", {"x"}}, {"Y", {"y"}}},
                          {{"Out", {"out"}}}, {{"x_num_col_dims", 2}}),
                   {{"x", x}, {"y", y}})["out"];
  EXPECT_EQ(out.shape(), Shape({2, 3, 5}));
  Tensor x2 = RandomTensor<double>({2, 3, 4}, -1, 1, 3);
  auto out2 =
      RunOp(MakeOp("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}}),
            {{"x", x2}, {"y", RandomTensor<double>({12, 5}, -1, 1, 4)}})["out"];
  EXPECT_EQ(out2.shape(), Shape({2, 5}));
}

TEST(MulOp, FloatMatchesDouble) {
  Tensor xd = RandomTensor<double>({7, 9}, -1, 1, 5);
  Tensor yd = RandomTensor<double>({9, 4}, -1, 1, 6);
  Tensor xf = RandomTensor<float>({7, 9}, -1, 1, 5);
  Tensor yf = RandomTensor<float>({9, 4}, -1, 1, 6);
  auto op = MakeOp("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}});
  auto d = testing::ToVector<double>(RunOp(op, {{"x", xd}, {"y", yd}})["out"]);
  auto f = testing::ToVector<float>(RunOp(op, {{"x", xf}, {"y", yf}})["out"]);
  for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-5);
}

TEST(MulOp, Gradient) {
  for (auto dims :
       std::vector<std::array<int, 3>>{{1, 1, 1}, {3, 5, 7}, {6, 1, 4}}) {
    auto op = MakeOp("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}});
    EXPECT_TRUE(CheckGradient(
        op, {{"x", RandomTensor<double>({dims[0], dims[1]}, -1, 1, 7)},
             {"y", RandomTensor<double>({dims[1], dims[2]}, -1, 1, 8)}}));
  }
  auto op3 = MakeOp("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}},
                    {{"x_num_col_dims", 2}});
  EXPECT_TRUE(
      CheckGradient(op3, {{"x", RandomTensor<double>({2, 3, 4}, -1, 1, 9)},
                          {"y", RandomTensor<double>({4, 3}, -1, 1, 10)}}));
}

// mul_grad with YGradIn: Y@GRAD = YGradIn + X^T dOut, summed inside the
// product (the pipeline's accumulation over micro-batches), in place (one
// var in both slots) or into another var; X@GRAD as without it. Against a
// naive loop in float64; the 16-bit kernels round the sum once (within
// one unit in the last place of the float32 result).
proto::OpDesc MulGradAccumulating(const std::string& acc,
                                  const std::string& dy) {
  return MakeOp("mul_grad",
                {{"X", {"x"}},
                 {"Y", {"y"}},
                 {GradSlot("Out"), {"dout"}},
                 {"YGradIn", {acc}}},
                {{GradSlot("X"), {"dx"}}, {GradSlot("Y"), {dy}}});
}

TEST(MulOp, GradientAddsYGradInInsideTheProduct) {
  const int m = 5, k = 7, n = 3;
  const Tensor x = RandomTensor<double>({m, k}, -1, 1, 11);
  const Tensor y = RandomTensor<double>({k, n}, -1, 1, 12);
  const Tensor dout = RandomTensor<double>({m, n}, -1, 1, 13);
  const Tensor acc = RandomTensor<double>({k, n}, -1, 1, 14);
  // X^T dOut + acc, and dOut Y^T.
  std::vector<double> xt(k * m);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < k; ++j)
      xt[j * m + i] = testing::ToVector<double>(x)[i * k + j];
  std::vector<double> want_dy =
      NaiveMatMul(xt, testing::ToVector<double>(dout), k, m, n);
  for (int i = 0; i < k * n; ++i)
    want_dy[i] += testing::ToVector<double>(acc)[i];
  TensorMap plain =
      RunOp(MakeOp("mul_grad",
                   {{"X", {"x"}}, {"Y", {"y"}}, {GradSlot("Out"), {"dout"}}},
                   {{GradSlot("X"), {"dx"}}, {GradSlot("Y"), {"dy"}}}),
            {{"x", x}, {"y", y}, {"dout", dout}});
  for (const bool in_place : {true, false}) {
    SCOPED_TRACE(in_place ? "in place" : "into another var");
    const std::string dy = in_place ? "acc" : "dy";
    TensorMap got = RunOp(MulGradAccumulating("acc", dy),
                          {{"x", x}, {"y", y}, {"dout", dout}, {"acc", acc}});
    const auto d = testing::ToVector<double>(got[dy]);
    ASSERT_EQ(d.size(), want_dy.size());
    for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(d[i], want_dy[i], 1e-12);
    EXPECT_EQ(testing::ToVector<double>(got["dx"]),
              testing::ToVector<double>(plain["dx"]));
  }
  // float32, and the 16-bit types against it.
  auto f32 = [](const Tensor& t) {
    Tensor f;
    float* p = f.mutable_data<float>(t.shape());
    for (int64_t i = 0; i < t.numel(); ++i)
      p[i] = static_cast<float>(t.data<double>()[i]);
    return f;
  };
  const TensorMap feeds = {
      {"x", f32(x)}, {"y", f32(y)}, {"dout", f32(dout)}, {"acc", f32(acc)}};
  TensorMap single = RunOp(MulGradAccumulating("acc", "acc"), feeds);
  const auto f = testing::ToVector<float>(single["acc"]);
  for (size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(f[i], want_dy[i], 1e-5);
  for (DataType dt : {DataType::kBFloat16, DataType::kFloat16}) {
    SCOPED_TRACE(DataTypeName(dt));
    TensorMap half;
    for (const auto& [name, t] : feeds)
      half[name] = testing::ToHalf(testing::Rounded(t, dt), dt);
    // The float32 kernel on the 16-bit values, then the 16-bit kernel.
    TensorMap rounded;
    for (const auto& [name, t] : half) rounded[name] = testing::ToFloat32(t);
    const Tensor ref = RunOp(MulGradAccumulating("acc", "acc"), rounded)["acc"];
    const Tensor got = RunOp(MulGradAccumulating("acc", "acc"), half)["acc"];
    EXPECT_TRUE(
        testing::HalfClose(ref, got, testing::HalfTolerance(dt), "Y@GRAD"));
  }
}

TEST(MulOp, GradientRefusesAYGradInOfAnotherShape) {
  const std::string error =
      testing::ErrorOf(MulGradAccumulating("acc", "dy"),
                       {{"x", RandomTensor<double>({4, 3}, -1, 1, 1)},
                        {"y", RandomTensor<double>({3, 2}, -1, 1, 2)},
                        {"dout", RandomTensor<double>({4, 2}, -1, 1, 3)},
                        {"acc", RandomTensor<double>({2, 3}, -1, 1, 4)}});
  EXPECT_NE(error.find("YGradIn 'acc' [2, 3] must have the shape of Y 'y'"),
            std::string::npos)
      << error;
}

TEST(MulOp, ShapeMismatchNamesVars) {
  auto op = MakeOp("mul", {{"X", {"lhs"}}, {"Y", {"rhs"}}}, {{"Out", {"o"}}});
  try {
    RunOp(op, {{"lhs", RandomTensor<double>({2, 3}, -1, 1, 1)},
               {"rhs", RandomTensor<double>({4, 5}, -1, 1, 1)}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("lhs"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rhs"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fluid
