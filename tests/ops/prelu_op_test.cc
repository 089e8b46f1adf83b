// prelu: forward against a naive loop in every mode, the fp64 numeric
// gradient for X and Alpha (points near the kink at 0 skipped), threads,
// compile-time shapes and errors.
#include <gtest/gtest.h>

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

proto::OpDesc Prelu(const std::string& mode) {
  return MakeOp("prelu", {{"X", {"x"}}, {"Alpha", {"alpha"}}},
                {{"Out", {"out"}}}, {{"mode", mode}});
}

// The alpha index of element i of x [N, C, ...] for `mode`, written out.
int64_t NaiveAlpha(const Shape& s, const std::string& mode, int64_t i) {
  if (mode == "all") return 0;
  const int64_t per_example = s.Product(1, s.rank());
  if (mode == "element") return i % per_example;
  return (i % per_example) / s.Product(2, s.rank());
}

Shape AlphaShape(const Shape& s, const std::string& mode) {
  if (mode == "all") return Shape({1});
  if (mode == "channel") return Shape({s[1]});
  Shape a({1});
  for (int i = 1; i < s.rank(); ++i) a.push_back(s[i]);
  return a;
}

TEST(PreluOp, ForwardMatchesNaive) {
  uint64_t seed = 1;
  for (const Shape& s : {Shape({2, 3, 4, 5}), Shape({4, 6}), Shape({2, 3, 7})})
    for (int threads : {1, 4})
      for (const char* mode : {"all", "channel", "element"}) {
        Tensor x = RandomTensor<double>(s, -2, 2, seed++);
        Tensor a = RandomTensor<double>(AlphaShape(s, mode), -1, 1, seed++);
        auto out = RunOp(Prelu(mode), {{"x", x}, {"alpha", a}}, threads);
        auto xv = ToVector<double>(x), av = ToVector<double>(a);
        auto got = ToVector<double>(out["out"]);
        ASSERT_EQ(out["out"].shape(), s);
        for (int64_t i = 0; i < s.numel(); ++i)
          ASSERT_EQ(got[i],
                    xv[i] > 0 ? xv[i] : av[NaiveAlpha(s, mode, i)] * xv[i])
              << mode << " " << s << " at " << i;
      }
}

TEST(PreluOp, Gradient) {
  uint64_t seed = 20;
  for (const char* mode : {"all", "channel", "element"}) {
    for (const Shape& s : {Shape({2, 3, 2, 2}), Shape({3, 4})}) {
      testing::GradCheckOptions opt;
      opt.kink = 0.0;
      opt.kink_range = 1e-3;
      EXPECT_TRUE(CheckGradient(
          Prelu(mode),
          {{"x", RandomTensor<double>(s, -2, 2, seed++)},
           {"alpha", RandomTensor<double>(AlphaShape(s, mode), -1, 1, seed++)}},
          opt))
          << mode << " " << s;
    }
  }
}

TEST(PreluOp, ThreadedAlphaGradient) {
  // 2 * 300 * 200 elements: the parameter gradient's sums run on the pool.
  testing::GradCheckOptions opt;
  opt.kink_range = 1e-3;
  opt.threads = 4;
  opt.wrt = {"alpha"};
  EXPECT_TRUE(
      CheckGradient(Prelu("channel"),
                    {{"x", RandomTensor<double>({2, 300, 200}, -2, 2, 40)},
                     {"alpha", RandomTensor<double>({300}, -1, 1, 41)}},
                    opt));
}

TEST(PreluOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape({-1, 3, 8, 8}));
  AddVarDesc(block, "alpha", DataType::kFloat32, Shape({1, 3, 1, 1}));
  InferShapeAtCompileTime(Prelu("channel"), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "out")), Shape({-1, 3, 8, 8}));
}

TEST(PreluOp, BadInputsNameVars) {
  std::string msg = ErrorOf(Prelu("channel"),
                            {{"x", RandomTensor<double>({2, 3, 4}, -1, 1, 1)},
                             {"alpha", RandomTensor<double>({4}, -1, 1, 1)}});
  EXPECT_NE(msg.find("Alpha 'alpha' [4] must hold 3 elements"),
            std::string::npos)
      << msg;
  msg = ErrorOf(Prelu("all"), {{"x", RandomTensor<double>({2, 3}, -1, 1, 1)},
                               {"alpha", RandomTensor<double>({2}, -1, 1, 1)}});
  EXPECT_NE(msg.find("must hold 1 elements"), std::string::npos) << msg;
  msg = ErrorOf(Prelu("element"),
                {{"x", RandomTensor<double>({6}, -1, 1, 1)},
                 {"alpha", RandomTensor<double>({6}, -1, 1, 1)}});
  EXPECT_NE(msg.find("rank >= 2"), std::string::npos) << msg;
  msg = ErrorOf(Prelu("row"), {{"x", RandomTensor<double>({2, 3}, -1, 1, 1)},
                               {"alpha", RandomTensor<double>({1}, -1, 1, 1)}});
  EXPECT_NE(msg.find("mode"), std::string::npos) << msg;
  EXPECT_NE(msg.find("row"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
