#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::MatMulCase;
using testing::MatMulOp;
using testing::RandomTensor;
using testing::RunOp;
using testing::StoredShape;
using testing::ToVector;

// Element (b, r, c) of a rank-2 or rank-3 tensor; a rank-2 one ignores b.
double At(const std::vector<double>& v, const Shape& s, int64_t b, int64_t r,
          int64_t c) {
  const int rk = s.rank();
  const int64_t rows = s[rk - 2], cols = s[rk - 1];
  const int64_t base = rk == 3 ? b * rows * cols : 0;
  return v[base + r * cols + c];
}

// Straight from the definition: Out[b, i, j] = alpha * sum_p op(X)[b, i, p]
// * op(Y)[b, p, j].
std::vector<double> NaiveMatMul(const Tensor& x, bool tx, const Tensor& y,
                                bool ty, double alpha, Shape* out_shape) {
  const Shape& xs = x.shape();
  const Shape& ys = y.shape();
  const auto xv = ToVector<double>(x);
  const auto yv = ToVector<double>(y);
  const int64_t batch = xs.rank() == 3 ? xs[0] : (ys.rank() == 3 ? ys[0] : 1);
  const int64_t m = tx ? xs[xs.rank() - 1] : xs[xs.rank() - 2];
  const int64_t k = tx ? xs[xs.rank() - 2] : xs[xs.rank() - 1];
  const int64_t n = ty ? ys[ys.rank() - 2] : ys[ys.rank() - 1];
  *out_shape =
      (xs.rank() == 3 || ys.rank() == 3) ? Shape({batch, m, n}) : Shape({m, n});
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += (tx ? At(xv, xs, b, p, i) : At(xv, xs, b, i, p)) *
               (ty ? At(yv, ys, b, j, p) : At(yv, ys, b, p, j));
        out.push_back(alpha * s);
      }
  return out;
}

const std::vector<MatMulCase>& Cases() {
  static const std::vector<MatMulCase> cases = {
      {0, 0, 1, 1, 1}, {0, 0, 3, 5, 7}, {0, 0, 17, 33, 9}, {0, 0, 6, 1, 4},
      {2, 2, 3, 4, 5}, {3, 3, 1, 2, 1}, {2, 0, 3, 4, 2},   {0, 2, 3, 4, 2},
      {1, 1, 4, 3, 2}, {5, 5, 2, 7, 3}};
  return cases;
}

TEST(MatmulOp, ForwardMatchesNaive) {
  uint64_t seed = 1;
  for (const MatMulCase& c : Cases()) {
    for (int t = 0; t < 4; ++t) {
      const bool tx = t & 1, ty = t & 2;
      for (float alpha : {1.0f, -0.5f}) {
        Tensor x = RandomTensor<double>(StoredShape(c.xb, c.m, c.k, tx), -1, 1,
                                        seed++);
        Tensor y = RandomTensor<double>(StoredShape(c.yb, c.k, c.n, ty), -1, 1,
                                        seed++);
        Tensor out =
            RunOp(MatMulOp(tx, ty, alpha), {{"x", x}, {"y", y}})["out"];
        Shape want_shape;
        auto want = NaiveMatMul(x, tx, y, ty, alpha, &want_shape);
        ASSERT_EQ(out.shape(), want_shape)
            << x.shape() << " x " << y.shape() << " tx=" << tx << " ty=" << ty;
        auto got = ToVector<double>(out);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 1e-12)
              << x.shape() << " x " << y.shape() << " tx=" << tx << " ty=" << ty
              << " at " << i;
      }
    }
  }
}

// Many small products with a pool go one product per task; large ones go
// through the pooled Gemm. Both must agree with the definition.
TEST(MatmulOp, ThreadedBatchesMatchNaive) {
  for (const MatMulCase& c : std::vector<MatMulCase>{
           {64, 64, 8, 9, 7}, {16, 0, 5, 6, 4}, {4, 4, 70, 80, 60}}) {
    Tensor x =
        RandomTensor<double>(StoredShape(c.xb, c.m, c.k, false), -1, 1, 3);
    Tensor y =
        RandomTensor<double>(StoredShape(c.yb, c.k, c.n, true), -1, 1, 4);
    Tensor out = RunOp(MatMulOp(false, true, 2.0f), {{"x", x}, {"y", y}},
                       /*threads=*/4)["out"];
    Shape want_shape;
    auto want = NaiveMatMul(x, false, y, true, 2.0, &want_shape);
    ASSERT_EQ(out.shape(), want_shape);
    auto got = ToVector<double>(out);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-11) << i;
  }
}

TEST(MatmulOp, FloatMatchesDouble) {
  for (int t = 0; t < 4; ++t) {
    const bool tx = t & 1, ty = t & 2;
    const Shape xs = StoredShape(3, 7, 9, tx), ys = StoredShape(3, 9, 4, ty);
    auto op = MatMulOp(tx, ty, 0.75f);
    auto d = ToVector<double>(
        RunOp(op, {{"x", RandomTensor<double>(xs, -1, 1, 5)},
                   {"y", RandomTensor<double>(ys, -1, 1, 6)}})["out"]);
    auto f = ToVector<float>(
        RunOp(op, {{"x", RandomTensor<float>(xs, -1, 1, 5)},
                   {"y", RandomTensor<float>(ys, -1, 1, 6)}})["out"]);
    ASSERT_EQ(d.size(), f.size());
    for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-5);
  }
}

TEST(MatmulOp, Gradient) {
  uint64_t seed = 100;
  for (const MatMulCase& c : Cases()) {
    if (c.m * c.k * c.n > 200) continue;  // keep the numeric check quick
    for (int t = 0; t < 4; ++t) {
      const bool tx = t & 1, ty = t & 2;
      Tensor x =
          RandomTensor<double>(StoredShape(c.xb, c.m, c.k, tx), -1, 1, seed++);
      Tensor y =
          RandomTensor<double>(StoredShape(c.yb, c.k, c.n, ty), -1, 1, seed++);
      EXPECT_TRUE(CheckGradient(MatMulOp(tx, ty, t == 3 ? 1.5f : 1.0f),
                                {{"x", x}, {"y", y}}))
          << x.shape() << " x " << y.shape() << " tx=" << tx << " ty=" << ty;
    }
  }
}

TEST(MatmulOp, GradientWithPool) {
  testing::GradCheckOptions opt;
  opt.threads = 3;
  EXPECT_TRUE(CheckGradient(MatMulOp(true, false),
                            {{"x", RandomTensor<double>({6, 2, 3}, -1, 1, 7)},
                             {"y", RandomTensor<double>({2, 4}, -1, 1, 8)}},
                            opt));
}

TEST(MatmulOp, OnlyOneGradientRequested) {
  testing::GradCheckOptions opt;
  opt.wrt = {"y"};
  EXPECT_TRUE(CheckGradient(MatMulOp(false, false),
                            {{"x", RandomTensor<double>({3, 4}, -1, 1, 9)},
                             {"y", RandomTensor<double>({4, 2}, -1, 1, 10)}},
                            opt));
}

TEST(MatmulOp, CompileTimeShapesKeepUnknownBatch) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "a", DataType::kFloat32, Shape({-1, 784}));
  AddVarDesc(block, "w", DataType::kFloat32, Shape({784, 10}));
  AddVarDesc(block, "q", DataType::kFloat32, Shape({-1, 5, 8}));
  AddVarDesc(block, "k", DataType::kFloat32, Shape({-1, 6, 8}));
  InferShapeAtCompileTime(
      MakeOp("matmul", {{"X", {"a"}}, {"Y", {"w"}}}, {{"Out", {"o1"}}}), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "o1")), Shape({-1, 10}));
  InferShapeAtCompileTime(MakeOp("matmul", {{"X", {"q"}}, {"Y", {"k"}}},
                                 {{"Out", {"o2"}}}, {{"transpose_Y", true}}),
                          block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "o2")), Shape({-1, 5, 6}));
}

// A batched operand [B.., rows, cols] as the rank-3 [prod(B..), rows, cols]
// NaiveMatMul reads (a rank-2 one as it is).
Tensor AsRank3(const Tensor& t) {
  const Shape& s = t.shape();
  if (s.rank() <= 3) return t;
  const int64_t rows = s[s.rank() - 2], cols = s[s.rank() - 1];
  return testing::MakeTensor<double>({t.numel() / (rows * cols), rows, cols},
                                     ToVector<double>(t));
}

// Stored [b0, b1, rows, cols] ([.., cols, rows] when transposed); b0 = 0
// stands for a plain matrix.
Shape Stored4(int64_t b0, int64_t b1, int64_t rows, int64_t cols, bool t) {
  Shape s = b0 == 0 ? Shape() : Shape({b0, b1});
  s.push_back(t ? cols : rows);
  s.push_back(t ? rows : cols);
  return s;
}

// [B, H, M, K] x [B, H, K, N] as attention's heads use it, and a rank-2
// operand shared by a rank-4 batch: every transpose, scaled.
TEST(MatmulOp, Rank4BatchesMatchNaive) {
  struct Case {
    int64_t xb, yb;  // 0: rank 2
  };
  uint64_t seed = 300;
  for (Case c : {Case{2, 2}, Case{2, 0}, Case{0, 2}}) {
    for (int t = 0; t < 4; ++t) {
      const bool tx = t & 1, ty = t & 2;
      Tensor x =
          RandomTensor<double>(Stored4(c.xb, 3, 4, 5, tx), -1, 1, seed++);
      Tensor y =
          RandomTensor<double>(Stored4(c.yb, 3, 5, 6, ty), -1, 1, seed++);
      Tensor out = RunOp(MatMulOp(tx, ty, 0.5f), {{"x", x}, {"y", y}})["out"];
      EXPECT_EQ(out.shape(), Shape({2, 3, 4, 6})) << x.shape() << y.shape();
      Shape flat;
      auto want = NaiveMatMul(AsRank3(x), tx, AsRank3(y), ty, 0.5, &flat);
      auto got = ToVector<double>(out);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-13) << x.shape() << " x " << y.shape();
      EXPECT_TRUE(CheckGradient(MatMulOp(tx, ty, 0.5f), {{"x", x}, {"y", y}}))
          << x.shape() << " x " << y.shape() << " tx=" << tx << " ty=" << ty;
    }
  }
}

TEST(MatmulOp, Rank4CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "q", DataType::kFloat32, Shape({-1, 4, 5, 8}));
  AddVarDesc(block, "k", DataType::kFloat32, Shape({-1, 4, 7, 8}));
  AddVarDesc(block, "w", DataType::kFloat32, Shape({8, 3}));
  InferShapeAtCompileTime(MakeOp("matmul", {{"X", {"q"}}, {"Y", {"k"}}},
                                 {{"Out", {"s"}}}, {{"transpose_Y", true}}),
                          block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "s")), Shape({-1, 4, 5, 7}));
  InferShapeAtCompileTime(
      MakeOp("matmul", {{"X", {"q"}}, {"Y", {"w"}}}, {{"Out", {"p"}}}), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "p")), Shape({-1, 4, 5, 3}));
}

using testing::ErrorOf;

TEST(MatmulOp, BadShapesNameVars) {
  auto op =
      MakeOp("matmul", {{"X", {"lhs"}}, {"Y", {"rhs"}}}, {{"Out", {"o"}}});
  std::string msg =
      ErrorOf(op, {{"lhs", RandomTensor<double>({2, 3}, -1, 1, 1)},
                   {"rhs", RandomTensor<double>({4, 5}, -1, 1, 1)}});
  EXPECT_NE(msg.find("lhs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rhs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4, 5]"), std::string::npos) << msg;

  msg = ErrorOf(op, {{"lhs", RandomTensor<double>({2, 3, 4}, -1, 1, 1)},
                     {"rhs", RandomTensor<double>({3, 4, 5}, -1, 1, 1)}});
  EXPECT_NE(msg.find("batch"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lhs"), std::string::npos) << msg;

  // Batch dims of two batched operands must agree dim by dim.
  msg = ErrorOf(op, {{"lhs", RandomTensor<double>({2, 3, 2, 4}, -1, 1, 1)},
                     {"rhs", RandomTensor<double>({3, 2, 4, 5}, -1, 1, 1)}});
  EXPECT_NE(msg.find("batch"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 2, 4, 5]"), std::string::npos) << msg;

  msg = ErrorOf(op, {{"lhs", RandomTensor<double>({6}, -1, 1, 1)},
                     {"rhs", RandomTensor<double>({6, 5}, -1, 1, 1)}});
  EXPECT_NE(msg.find("rank 2 or more"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lhs"), std::string::npos) << msg;

  // The transposes decide which dims must agree: [3, 2]^T x [3, 4] is fine.
  msg = ErrorOf(MakeOp("matmul", {{"X", {"lhs"}}, {"Y", {"rhs"}}},
                       {{"Out", {"o"}}}, {{"transpose_X", true}}),
                {{"lhs", RandomTensor<double>({3, 2}, -1, 1, 1)},
                 {"rhs", RandomTensor<double>({3, 4}, -1, 1, 1)}});
  EXPECT_EQ(msg, "");
}

}  // namespace
}  // namespace fluid
