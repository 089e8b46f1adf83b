// norm (fluid.layers.l2_normalize): forward against a naive loop along every
// axis (negative ones too), Norm's shape, the fp64 numeric gradient,
// threads, compile-time shapes and errors.
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

proto::OpDesc Norm(int axis, float eps = 1e-10f) {
  return MakeOp("norm", {{"X", {"x"}}}, {{"Out", {"out"}}, {"Norm", {"n"}}},
                {{"axis", int32_t{axis}}, {"epsilon", eps}});
}

void ExpectMatchesNaive(const Shape& s, int axis, int threads, uint64_t seed) {
  Tensor x = RandomTensor<double>(s, -2, 2, seed);
  const float eps = 1e-3f;
  auto out = RunOp(Norm(axis, eps), {{"x", x}}, threads);
  const int a = axis < 0 ? axis + s.rank() : axis;
  const int64_t pre = s.Product(0, a), n = s[a],
                post = s.Product(a + 1, s.rank());
  Shape ns = s;
  ns[a] = 1;
  ASSERT_EQ(out["n"].shape(), ns);
  ASSERT_EQ(out["out"].shape(), s);
  auto xv = ToVector<double>(x), got = ToVector<double>(out["out"]);
  auto norm = ToVector<double>(out["n"]);
  for (int64_t p = 0; p < pre; ++p) {
    for (int64_t q = 0; q < post; ++q) {
      long double ss = 0;
      for (int64_t i = 0; i < n; ++i) {
        const long double v = xv[(p * n + i) * post + q];
        ss += v * v;
      }
      const long double want = std::sqrt(ss + double{eps});
      EXPECT_NEAR(norm[p * post + q], double(want), 1e-12) << s << " " << axis;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t at = (p * n + i) * post + q;
        EXPECT_NEAR(got[at], double(xv[at] / want), 1e-13) << s << " " << axis;
      }
    }
  }
}

TEST(NormOp, ForwardMatchesNaive) {
  uint64_t seed = 1;
  for (int axis = -3; axis < 3; ++axis)
    ExpectMatchesNaive({2, 3, 4}, axis, 1, seed++);
  ExpectMatchesNaive({5}, 0, 1, seed++);
}

TEST(NormOp, ThreadedMatchesNaive) {
  ExpectMatchesNaive({2000, 50}, 1, 4, 30);
  ExpectMatchesNaive({40, 30, 60}, 1, 4, 31);
}

TEST(NormOp, Gradient) {
  uint64_t seed = 40;
  testing::GradCheckOptions opt;
  opt.of = {"out"};
  for (int axis : {0, 1, 2, -1}) {
    EXPECT_TRUE(CheckGradient(
        Norm(axis), {{"x", RandomTensor<double>({3, 4, 2}, -2, 2, seed++)}},
        opt))
        << "axis " << axis;
  }
  opt.threads = 3;
  EXPECT_TRUE(CheckGradient(
      Norm(1, 0.5f), {{"x", RandomTensor<double>({6, 5}, -2, 2, 50)}}, opt));
}

TEST(NormOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape({-1, 7, 16}));
  InferShapeAtCompileTime(Norm(-2), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "out")), Shape({-1, 7, 16}));
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "n")), Shape({-1, 1, 16}));
}

TEST(NormOp, BadInputsNameVars) {
  std::string msg =
      ErrorOf(Norm(2), {{"x", RandomTensor<double>({2, 6}, -1, 1, 1)}});
  EXPECT_NE(msg.find("axis=2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("X 'x' [2, 6]"), std::string::npos) << msg;
  msg = ErrorOf(Norm(-3), {{"x", RandomTensor<double>({2, 6}, -1, 1, 1)}});
  EXPECT_NE(msg.find("[-2, 2)"), std::string::npos) << msg;
  msg =
      ErrorOf(Norm(1, -1.0f), {{"x", RandomTensor<double>({2, 6}, -1, 1, 1)}});
  EXPECT_NE(msg.find("epsilon"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
