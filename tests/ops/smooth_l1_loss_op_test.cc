// smooth_l1_loss: forward against a naive loop with and without the
// weights and for several sigmas, Diff, the fp64 numeric gradient for X and
// Y (points near the switch between the two pieces skipped), threads,
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

proto::OpDesc SmoothL1(bool weighted, float sigma) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"X", {"x"}}, {"Y", {"y"}}};
  if (weighted) {
    in.push_back({"InsideWeight", {"iw"}});
    in.push_back({"OutsideWeight", {"ow"}});
  }
  return MakeOp("smooth_l1_loss", in, {{"Diff", {"diff"}}, {"Out", {"out"}}},
                {{"sigma", sigma}});
}

testing::TensorMap Inputs(const Shape& s, bool weighted, uint64_t seed) {
  testing::TensorMap in = {{"x", RandomTensor<double>(s, -3, 3, seed)},
                           {"y", RandomTensor<double>(s, -3, 3, seed + 1)}};
  if (weighted) {
    in["iw"] = RandomTensor<double>(s, 0, 2, seed + 2);
    in["ow"] = RandomTensor<double>(s, 0, 2, seed + 3);
  }
  return in;
}

TEST(SmoothL1LossOp, ForwardMatchesNaive) {
  uint64_t seed = 1;
  for (const Shape& s : {Shape({4, 5}), Shape({3, 2, 4}), Shape({2000, 40})})
    for (bool weighted : {false, true})
      for (float sigma : {1.0f, 0.5f, 3.0f}) {
        auto in = Inputs(s, weighted, seed);
        seed += 4;
        auto out = RunOp(SmoothL1(weighted, sigma), in, /*threads=*/4);
        const int64_t rows = s[0], cols = s.numel() / rows;
        auto x = ToVector<double>(in["x"]), y = ToVector<double>(in["y"]);
        std::vector<double> iw(x.size(), 1.0), ow(x.size(), 1.0);
        if (weighted) {
          iw = ToVector<double>(in["iw"]);
          ow = ToVector<double>(in["ow"]);
        }
        auto diff = ToVector<double>(out["diff"]);
        auto loss = ToVector<double>(out["out"]);
        ASSERT_EQ(out["out"].shape(), Shape({rows, 1}));
        const double s2 = double{sigma} * double{sigma};
        for (int64_t r = 0; r < rows; ++r) {
          double want = 0;
          for (int64_t c = 0; c < cols; ++c) {
            const int64_t i = r * cols + c;
            const double d = iw[i] * (x[i] - y[i]);
            ASSERT_NEAR(diff[i], d, 1e-15);
            want += ow[i] * (std::abs(d) < 1 / s2 ? 0.5 * s2 * d * d
                                                  : std::abs(d) - 0.5 / s2);
          }
          ASSERT_NEAR(loss[r], want, 1e-12) << s << " sigma " << sigma;
        }
      }
}

TEST(SmoothL1LossOp, Gradient) {
  uint64_t seed = 50;
  for (bool weighted : {false, true}) {
    for (float sigma : {1.0f, 2.0f}) {
      testing::GradCheckOptions opt;
      opt.of = {"out"};
      opt.wrt = {"x", "y"};
      auto in = Inputs({4, 3, 2}, weighted, seed);
      seed += 4;
      // Differences near +-1/sigma^2 (the pieces meet) or 0 are nudged
      // away, so the central differences stay on one piece.
      double* x = in["x"].data<double>();
      const double* y = in["y"].data<double>();
      for (int64_t i = 0; i < in["x"].numel(); ++i) {
        const double d = std::abs(x[i] - y[i]);
        if (std::abs(d - 1 / (sigma * sigma)) < 1e-2 || d < 1e-2) x[i] += 0.05;
      }
      EXPECT_TRUE(CheckGradient(SmoothL1(weighted, sigma), in, opt))
          << "weighted " << weighted << " sigma " << sigma;
    }
  }
}

TEST(SmoothL1LossOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape({-1, 4}));
  AddVarDesc(block, "y", DataType::kFloat32, Shape({-1, 4}));
  InferShapeAtCompileTime(SmoothL1(false, 1.0f), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "diff")), Shape({-1, 4}));
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "out")), Shape({-1, 1}));
}

TEST(SmoothL1LossOp, BadInputsNameVars) {
  std::string msg = ErrorOf(SmoothL1(false, 1.0f),
                            {{"x", RandomTensor<double>({3, 4}, -1, 1, 1)},
                             {"y", RandomTensor<double>({3, 5}, -1, 1, 1)}});
  EXPECT_NE(msg.find("Y 'y' [3, 5]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("X 'x' [3, 4]"), std::string::npos) << msg;
  auto in = Inputs({3, 4}, true, 1);
  in["ow"] = RandomTensor<double>({4, 3}, 0, 1, 1);
  msg = ErrorOf(SmoothL1(true, 1.0f), in);
  EXPECT_NE(msg.find("OutsideWeight 'ow' [4, 3]"), std::string::npos) << msg;
  msg = ErrorOf(SmoothL1(false, 0.0f),
                {{"x", RandomTensor<double>({3, 4}, -1, 1, 1)},
                 {"y", RandomTensor<double>({3, 4}, -1, 1, 1)}});
  EXPECT_NE(msg.find("sigma"), std::string::npos) << msg;
  auto one = MakeOp("smooth_l1_loss",
                    {{"X", {"x"}}, {"Y", {"y"}}, {"InsideWeight", {"iw"}}},
                    {{"Diff", {"diff"}}, {"Out", {"out"}}});
  msg = ErrorOf(one, Inputs({3, 4}, true, 1));
  EXPECT_NE(msg.find("together"), std::string::npos) << msg;
  msg = ErrorOf(SmoothL1(false, 1.0f),
                {{"x", RandomTensor<double>({4}, -1, 1, 1)},
                 {"y", RandomTensor<double>({4}, -1, 1, 1)}});
  EXPECT_NE(msg.find("rank >= 2"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
