// group_norm: forward against a naive loop in long double (NCHW and NHWC,
// with and without Scale and Bias, several group counts), the saved Mean
// and Variance, the fp64 numeric gradient for X, Scale and Bias, threads,
// compile-time shapes and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
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

proto::OpDesc GroupNorm(int groups, const std::string& layout = "NCHW",
                        bool scale = true, bool bias = true) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"X", {"x"}}};
  if (scale) in.push_back({"Scale", {"scale"}});
  if (bias) in.push_back({"Bias", {"bias"}});
  return MakeOp("group_norm", in,
                {{"Y", {"y"}}, {"Mean", {"mean"}}, {"Variance", {"var"}}},
                {{"groups", int32_t{groups}},
                 {"data_layout", layout},
                 {"epsilon", 1e-5f}});
}

// x [N, C, S] (NCHW) or [N, S, C] (NHWC) in long double, written out.
void ExpectMatchesNaive(const Shape& s, int groups, const std::string& layout,
                        int params, uint64_t seed, int threads) {
  const bool last = layout == "NHWC";
  const int64_t n = s[0], c = last ? s[s.rank() - 1] : s[1];
  const int64_t sp = s.numel() / (n * c), cg = c / groups;
  testing::TensorMap in = {{"x", RandomTensor<double>(s, -3, 3, seed)}};
  if (params & 1) in["scale"] = RandomTensor<double>({c}, 0.5, 2, seed + 1);
  if (params & 2) in["bias"] = RandomTensor<double>({c}, -1, 1, seed + 2);
  auto out =
      RunOp(GroupNorm(groups, layout, params & 1, params & 2), in, threads);
  auto x = ToVector<double>(in["x"]), y = ToVector<double>(out["y"]);
  auto mean = ToVector<double>(out["mean"]), var = ToVector<double>(out["var"]);
  auto at = [&](int64_t ni, int64_t ch, int64_t p) {
    return last ? (ni * sp + p) * c + ch : (ni * c + ch) * sp + p;
  };
  ASSERT_EQ(out["mean"].shape(), Shape({n, groups}));
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t g = 0; g < groups; ++g) {
      long double m = 0, v = 0;
      for (int64_t ch = g * cg; ch < (g + 1) * cg; ++ch)
        for (int64_t p = 0; p < sp; ++p) m += x[at(ni, ch, p)];
      m /= cg * sp;
      for (int64_t ch = g * cg; ch < (g + 1) * cg; ++ch)
        for (int64_t p = 0; p < sp; ++p)
          v += (x[at(ni, ch, p)] - m) * (x[at(ni, ch, p)] - m);
      v /= cg * sp;
      ASSERT_NEAR(mean[ni * groups + g], double(m), 1e-13);
      ASSERT_NEAR(var[ni * groups + g], double(v), 1e-12);
      for (int64_t ch = g * cg; ch < (g + 1) * cg; ++ch)
        for (int64_t p = 0; p < sp; ++p) {
          long double want =
              (x[at(ni, ch, p)] - m) / std::sqrt(v + double{1e-5f});
          if (params & 1) want *= in["scale"].data<double>()[ch];
          if (params & 2) want += in["bias"].data<double>()[ch];
          ASSERT_NEAR(y[at(ni, ch, p)], double(want), 1e-12)
              << layout << " " << s << " groups " << groups;
        }
    }
}

TEST(GroupNormOp, ForwardMatchesNaive) {
  uint64_t seed = 1;
  for (int params = 0; params < 4; ++params) {
    ExpectMatchesNaive({2, 6, 3, 2}, 3, "NCHW", params, seed += 3, 1);
    ExpectMatchesNaive({2, 3, 2, 6}, 3, "NHWC", params, seed += 3, 1);
    ExpectMatchesNaive({2, 4, 5}, 1, "NCHW", params, seed += 3, 1);
    ExpectMatchesNaive({2, 5, 4}, 2, "NHWC", params, seed += 3, 1);
    ExpectMatchesNaive({3, 4}, 4, "NCHW", params, seed += 3, 1);
    ExpectMatchesNaive({3, 4}, 2, "NHWC", params, seed += 3, 1);
  }
  ExpectMatchesNaive({8, 32, 20, 20}, 8, "NCHW", 3, seed += 3, 4);
  ExpectMatchesNaive({8, 20, 20, 32}, 4, "NHWC", 3, seed += 3, 4);
}

TEST(GroupNormOp, Gradient) {
  uint64_t seed = 100;
  for (const char* layout : {"NCHW", "NHWC"})
    for (int params = 0; params < 4; ++params) {
      const bool scale = params & 1, bias = params & 2;
      const Shape s =
          std::string(layout) == "NCHW" ? Shape({2, 4, 3}) : Shape({2, 3, 4});
      testing::TensorMap in = {{"x", RandomTensor<double>(s, -2, 2, seed++)}};
      if (scale) in["scale"] = RandomTensor<double>({4}, 0.5, 2, seed++);
      if (bias) in["bias"] = RandomTensor<double>({4}, -1, 1, seed++);
      testing::GradCheckOptions opt;
      opt.of = {"y"};
      opt.threads = params == 3 ? 3 : 1;
      EXPECT_TRUE(CheckGradient(GroupNorm(2, layout, scale, bias), in, opt))
          << layout << " params " << params;
    }
}

TEST(GroupNormOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape({-1, 8, 4, 4}));
  AddVarDesc(block, "scale", DataType::kFloat32, Shape({8}));
  AddVarDesc(block, "bias", DataType::kFloat32, Shape({8}));
  InferShapeAtCompileTime(GroupNorm(4), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "y")), Shape({-1, 8, 4, 4}));
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "mean")), Shape({-1, 4}));
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "var")), Shape({-1, 4}));
}

TEST(GroupNormOp, BadInputsNameVars) {
  std::string msg =
      ErrorOf(GroupNorm(4), {{"x", RandomTensor<double>({2, 6, 3}, -1, 1, 1)},
                             {"scale", RandomTensor<double>({6}, -1, 1, 1)},
                             {"bias", RandomTensor<double>({6}, -1, 1, 1)}});
  EXPECT_NE(msg.find("groups=4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("X 'x' [2, 6, 3]"), std::string::npos) << msg;
  msg = ErrorOf(GroupNorm(2), {{"x", RandomTensor<double>({2, 6, 3}, -1, 1, 1)},
                               {"scale", RandomTensor<double>({3}, -1, 1, 1)},
                               {"bias", RandomTensor<double>({6}, -1, 1, 1)}});
  EXPECT_NE(msg.find("Scale 'scale' [3] must hold 6"), std::string::npos)
      << msg;
  msg = ErrorOf(GroupNorm(0), {{"x", RandomTensor<double>({2, 6}, -1, 1, 1)},
                               {"scale", RandomTensor<double>({6}, -1, 1, 1)},
                               {"bias", RandomTensor<double>({6}, -1, 1, 1)}});
  EXPECT_NE(msg.find("groups"), std::string::npos) << msg;
  msg = ErrorOf(GroupNorm(1, "NDHW"),
                {{"x", RandomTensor<double>({2, 6}, -1, 1, 1)},
                 {"scale", RandomTensor<double>({6}, -1, 1, 1)},
                 {"bias", RandomTensor<double>({6}, -1, 1, 1)}});
  EXPECT_NE(msg.find("NDHW"), std::string::npos) << msg;
  msg = ErrorOf(GroupNorm(1, "NCHW", false, false),
                {{"x", RandomTensor<double>({6}, -1, 1, 1)}});
  EXPECT_NE(msg.find("rank >= 2"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
