#include <gtest/gtest.h>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;

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
