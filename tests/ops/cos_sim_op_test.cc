// cos_sim: forward against a naive loop (Y with X's rows and Y broadcast),
// the saved norms, the fp64 numeric gradient for X and Y, threads,
// compile-time shapes and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc CosSim() {
  return MakeOp("cos_sim", {{"X", {"x"}}, {"Y", {"y"}}},
                {{"Out", {"out"}}, {"XNorm", {"xn"}}, {"YNorm", {"yn"}}});
}

void ExpectMatchesNaive(const Shape& xs, const Shape& ys, int threads,
                        uint64_t seed) {
  Tensor x = RandomTensor<double>(xs, -2, 2, seed);
  Tensor y = RandomTensor<double>(ys, -2, 2, seed + 1);
  auto out = RunOp(CosSim(), {{"x", x}, {"y", y}}, threads);
  const int64_t rows = xs[0], cols = xs.numel() / rows;
  auto xv = ToVector<double>(x), yv = ToVector<double>(y);
  auto got = ToVector<double>(out["out"]);
  auto xn = ToVector<double>(out["xn"]), yn = ToVector<double>(out["yn"]);
  ASSERT_EQ(out["out"].shape(), Shape({rows, 1}));
  ASSERT_EQ(out["yn"].shape(), Shape({ys[0], 1}));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t ry = ys[0] == 1 ? 0 : r;
    long double dot = 0, xx = 0, yy = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const long double a = xv[r * cols + c], b = yv[ry * cols + c];
      dot += a * b;
      xx += a * a;
      yy += b * b;
    }
    EXPECT_NEAR(got[r], double(dot / std::sqrt(xx) / std::sqrt(yy)), 1e-13)
        << xs << " row " << r;
    EXPECT_NEAR(xn[r], double(std::sqrt(xx)), 1e-12) << xs << " row " << r;
    EXPECT_NEAR(yn[ry], double(std::sqrt(yy)), 1e-12) << xs << " row " << r;
  }
}

TEST(CosSimOp, ForwardMatchesNaive) {
  ExpectMatchesNaive({4, 5}, {4, 5}, 1, 1);
  ExpectMatchesNaive({4, 5}, {1, 5}, 1, 3);
  ExpectMatchesNaive({3, 2, 3}, {3, 2, 3}, 1, 5);
  ExpectMatchesNaive({3, 2, 3}, {1, 2, 3}, 1, 7);
  ExpectMatchesNaive({1, 7}, {1, 7}, 1, 9);
}

TEST(CosSimOp, ThreadedMatchesNaive) {
  ExpectMatchesNaive({3000, 40}, {3000, 40}, 4, 11);
  ExpectMatchesNaive({3000, 40}, {1, 40}, 4, 13);
}

TEST(CosSimOp, Gradient) {
  testing::GradCheckOptions opt;
  opt.of = {"out"};
  EXPECT_TRUE(CheckGradient(CosSim(),
                            {{"x", RandomTensor<double>({4, 6}, -2, 2, 20)},
                             {"y", RandomTensor<double>({4, 6}, -2, 2, 21)}},
                            opt));
  EXPECT_TRUE(CheckGradient(CosSim(),
                            {{"x", RandomTensor<double>({5, 2, 3}, -2, 2, 22)},
                             {"y", RandomTensor<double>({1, 2, 3}, -2, 2, 23)}},
                            opt));
  opt.threads = 3;
  EXPECT_TRUE(CheckGradient(CosSim(),
                            {{"x", RandomTensor<double>({6, 4}, -2, 2, 24)},
                             {"y", RandomTensor<double>({1, 4}, -2, 2, 25)}},
                            opt));
}

TEST(CosSimOp, FloatMatchesDouble) {
  auto d = RunOp(CosSim(), {{"x", RandomTensor<double>({7, 33}, -4, 4, 8)},
                            {"y", RandomTensor<double>({1, 33}, -4, 4, 9)}});
  auto f = RunOp(CosSim(), {{"x", RandomTensor<float>({7, 33}, -4, 4, 8)},
                            {"y", RandomTensor<float>({1, 33}, -4, 4, 9)}});
  auto dv = ToVector<double>(d["out"]);
  auto fv = ToVector<float>(f["out"]);
  for (size_t i = 0; i < dv.size(); ++i) EXPECT_NEAR(fv[i], dv[i], 1e-5);
}

TEST(CosSimOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape({-1, 8}));
  AddVarDesc(block, "y", DataType::kFloat32, Shape({1, 8}));
  InferShapeAtCompileTime(CosSim(), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "out")), Shape({-1, 1}));
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "xn")), Shape({-1, 1}));
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "yn")), Shape({1, 1}));
}

TEST(CosSimOp, BadInputsNameVars) {
  std::string msg =
      ErrorOf(CosSim(), {{"x", RandomTensor<double>({3, 4}, -1, 1, 1)},
                         {"y", RandomTensor<double>({3, 5}, -1, 1, 1)}});
  EXPECT_NE(msg.find("Y 'y' [3, 5]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("X 'x' [3, 4]"), std::string::npos) << msg;
  msg = ErrorOf(CosSim(), {{"x", RandomTensor<double>({3, 4}, -1, 1, 1)},
                           {"y", RandomTensor<double>({2, 4}, -1, 1, 1)}});
  EXPECT_NE(msg.find("1 row"), std::string::npos) << msg;
  msg = ErrorOf(CosSim(), {{"x", RandomTensor<double>({4}, -1, 1, 1)},
                           {"y", RandomTensor<double>({4}, -1, 1, 1)}});
  EXPECT_NE(msg.find("rank >= 2"), std::string::npos) << msg;
  msg = ErrorOf(CosSim(), {{"x", RandomTensor<double>({3, 4}, -1, 1, 1)},
                           {"y", RandomTensor<double>({3, 2, 2}, -1, 1, 1)}});
  EXPECT_NE(msg.find("rank of X"), std::string::npos) << msg;
  msg = ErrorOf(CosSim(), {{"x", RandomTensor<double>({3, 4}, -1, 1, 1)},
                           {"y", RandomTensor<float>({3, 4}, -1, 1, 1)}});
  EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
