#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/image_op_cases.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::GradCheckOptions;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;
using testing::TransposeCase;
using testing::TransposeOp;

// The definition: every input pixel (i, j) of channel c spreads
// x * w[c, o] over the output window at (i s - p + a d, j s - p + b d).
std::vector<double> NaiveTranspose(const TransposeCase& k,
                                   const std::vector<double>& x,
                                   const std::vector<double>& f) {
  const int oh = k.OutH(), ow = k.OutW();
  const int cg = k.c / k.groups, mg = k.m / k.groups;
  std::vector<double> y(static_cast<size_t>(k.n) * k.m * oh * ow, 0.0);
  for (int n = 0; n < k.n; ++n)
    for (int c = 0; c < k.c; ++c)
      for (int i = 0; i < k.h; ++i)
        for (int j = 0; j < k.w; ++j) {
          const double v = x[((n * k.c + c) * k.h + i) * k.w + j];
          for (int o = 0; o < mg; ++o)
            for (int a = 0; a < k.kh; ++a)
              for (int b = 0; b < k.kw; ++b) {
                const int r = i * k.stride_h - k.pad_h + a * k.dil_h;
                const int s = j * k.stride_w - k.pad_w + b * k.dil_w;
                if (r < 0 || r >= oh || s < 0 || s >= ow) continue;
                const int out_c = c / cg * mg + o;
                y[((n * k.m + out_c) * oh + r) * ow + s] +=
                    v * f[((c * mg + o) * k.kh + a) * k.kw + b];
              }
        }
  return y;
}

void ExpectForwardMatches(const TransposeCase& k, int threads) {
  SCOPED_TRACE(Describe(k) + " threads " + std::to_string(threads));
  Tensor x = RandomTensor<double>(k.InputShape(), -1, 1, 11);
  Tensor f = RandomTensor<double>(k.FilterShape(), -1, 1, 12);
  Tensor y = RunOp(TransposeOp(k), {{"x", x}, {"w", f}}, threads)["y"];
  ASSERT_EQ(y.shape(), k.OutputShape());
  auto want = NaiveTranspose(k, ToVector<double>(x), ToVector<double>(f));
  auto got = ToVector<double>(y);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-12) << "at " << i;
}

// {n, c, h, w, m, kh, kw, sh, sw, ph, pw, dh, dw, groups, extra_h,
// extra_w}
std::vector<TransposeCase> Cases() {
  return {
      {1, 1, 3, 3, 1, 3, 3, 1, 1, 0, 0},
      {2, 3, 4, 5, 2, 3, 3, 2, 2, 1, 1},           // stride 2, padding 1
      {2, 2, 5, 4, 3, 4, 4, 2, 2, 1, 1},           // the usual 2x upsampler
      {3, 2, 3, 4, 4, 2, 3, 3, 1, 0, 1},           // asymmetric
      {2, 3, 4, 4, 2, 3, 3, 1, 1, 0, 0, 2, 2},     // dilation
      {2, 3, 5, 6, 4, 1, 1, 1, 1, 0, 0},           // 1x1: no col2im
      {2, 2, 4, 4, 3, 1, 1, 2, 2, 0, 0},           // 1x1 strided
      {2, 4, 4, 3, 6, 3, 3, 2, 1, 1, 0, 1, 1, 2},  // groups
      {2, 4, 3, 3, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4},  // depthwise
      {2, 2, 4, 5, 3, 3, 3, 2, 3, 1, 1, 1, 1, 1, 1, 2},  // output_size
      {1, 2, 3, 3, 2, 3, 2, 3, 2, 0, 0, 2, 1, 2, 2, 1},  // all at once
      {9, 4, 8, 8, 5, 3, 3, 1, 1, 1, 1},                 // several chunks
  };
}

TEST(Conv2dTransposeOp, ForwardMatchesNaive) {
  for (const auto& k : Cases()) ExpectForwardMatches(k, 1);
}

TEST(Conv2dTransposeOp, ForwardMatchesNaiveWithThreads) {
  for (const auto& k : Cases()) ExpectForwardMatches(k, 2);
  // Chunks of several images run on the pool.
  ExpectForwardMatches({13, 4, 6, 6, 8, 3, 3, 2, 2, 1, 1}, 2);
  ExpectForwardMatches({7, 3, 16, 16, 4, 1, 1, 1, 1, 0, 0}, 2);
}

void ExpectGradient(const TransposeCase& k, int threads) {
  SCOPED_TRACE(Describe(k) + " threads " + std::to_string(threads));
  GradCheckOptions opt;
  opt.threads = threads;
  EXPECT_TRUE(
      CheckGradient(TransposeOp(k),
                    {{"x", RandomTensor<double>(k.InputShape(), -1, 1, 21)},
                     {"w", RandomTensor<double>(k.FilterShape(), -1, 1, 22)}},
                    opt));
}

TEST(Conv2dTransposeOp, Gradient) {
  for (const auto& k : Cases()) {
    if (k.n * k.c * k.h * k.w > 400) continue;  // numeric checks are slow
    ExpectGradient(k, 1);
  }
}

TEST(Conv2dTransposeOp, GradientWithThreads) {
  // Several runs of chunks: the filter gradient is a sum of partials.
  ExpectGradient({9, 2, 4, 4, 3, 3, 3, 2, 2, 1, 1}, 2);
  ExpectGradient({6, 4, 3, 3, 4, 3, 3, 1, 1, 0, 0, 1, 1, 2}, 2);
}

TEST(Conv2dTransposeOp, GradientOfFilterOnly) {
  GradCheckOptions opt;
  opt.wrt = {"w"};
  TransposeCase k{2, 2, 3, 4, 3, 3, 3, 2, 2, 1, 1};
  EXPECT_TRUE(
      CheckGradient(TransposeOp(k),
                    {{"x", RandomTensor<double>(k.InputShape(), -1, 1, 31)},
                     {"w", RandomTensor<double>(k.FilterShape(), -1, 1, 32)}},
                    opt));
}

// <conv2d_transpose(x, w), y> == <x, conv2d(y, w)>: the op is conv2d's
// adjoint, for the same filter bank and attrs.
TEST(Conv2dTransposeOp, IsTheAdjointOfConv2d) {
  for (const TransposeCase& k :
       {TransposeCase{2, 4, 4, 5, 6, 3, 3, 2, 2, 1, 1, 1, 1, 2, 1, 1},
        TransposeCase{1, 3, 5, 5, 2, 2, 3, 1, 2, 0, 1, 2, 1}}) {
    SCOPED_TRACE(Describe(k));
    Tensor x = RandomTensor<double>(k.InputShape(), -1, 1, 41);
    Tensor w = RandomTensor<double>(k.FilterShape(), -1, 1, 42);
    Tensor y = RandomTensor<double>(k.OutputShape(), -1, 1, 43);
    auto t = ToVector<double>(RunOp(TransposeOp(k), {{"x", x}, {"w", w}})["y"]);
    testing::ConvCase c{k.n,     k.m,     k.OutH(),   k.OutW(),   k.c,
                        k.kh,    k.kw,    k.stride_h, k.stride_w, k.pad_h,
                        k.pad_w, k.dil_h, k.dil_w,    k.groups};
    auto conv = RunOp(testing::Conv2dOp(c, "in", "w"), {{"in", y}, {"w", w}});
    ASSERT_EQ(conv["y"].shape(), k.InputShape());
    auto cv = ToVector<double>(conv["y"]), xv = ToVector<double>(x),
         yv = ToVector<double>(y);
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < t.size(); ++i) lhs += t[i] * yv[i];
    for (size_t i = 0; i < xv.size(); ++i) rhs += xv[i] * cv[i];
    EXPECT_NEAR(lhs, rhs, 1e-10);
  }
}

TEST(Conv2dTransposeOp, FloatMatchesDouble) {
  TransposeCase k{3, 4, 5, 5, 3, 3, 3, 2, 2, 1, 1};
  auto op = TransposeOp(k);
  auto d = ToVector<double>(
      RunOp(op, {{"x", RandomTensor<double>(k.InputShape(), -1, 1, 5)},
                 {"w", RandomTensor<double>(k.FilterShape(), -1, 1, 6)}})["y"]);
  auto f = ToVector<float>(
      RunOp(op, {{"x", RandomTensor<float>(k.InputShape(), -1, 1, 5)},
                 {"w", RandomTensor<float>(k.FilterShape(), -1, 1, 6)}})["y"]);
  ASSERT_EQ(d.size(), f.size());
  for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-5);
}

TEST(Conv2dTransposeOp, CompileTimeShape) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "img", DataType::kFloat32, Shape{-1, 8, 7, 7});
  AddVarDesc(block, "w", DataType::kFloat32, Shape{8, 3, 4, 4});
  auto op = MakeOp("conv2d_transpose", {{"Input", {"img"}}, {"Filter", {"w"}}},
                   {{"Output", {"y"}}},
                   {{"strides", std::vector<int32_t>{2, 2}},
                    {"paddings", std::vector<int32_t>{1, 1}},
                    {"groups", int32_t{1}}});
  InferShapeAtCompileTime(op, block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "y")), Shape({-1, 3, 14, 14}));
  EXPECT_EQ(VarDtype(GetVarDesc(*block, "y")), DataType::kFloat32);
  // output_size one past the smallest; groups 2 double the channels.
  auto sized =
      MakeOp("conv2d_transpose", {{"Input", {"img"}}, {"Filter", {"w"}}},
             {{"Output", {"z"}}},
             {{"strides", std::vector<int32_t>{2, 2}},
              {"paddings", std::vector<int32_t>{1, 1}},
              {"groups", int32_t{2}},
              {"output_size", std::vector<int32_t>{15, 14}}});
  InferShapeAtCompileTime(sized, block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "z")), Shape({-1, 6, 15, 14}));
}

testing::TensorMap Inputs(const Shape& x, const Shape& w) {
  return {{"x", RandomTensor<double>(x, -1, 1, 1)},
          {"w", RandomTensor<double>(w, -1, 1, 2)}};
}

TEST(Conv2dTransposeOp, ChannelMismatchNamesVars) {
  TransposeCase k{1, 3, 4, 4, 2, 3, 3, 1, 1, 0, 0};
  std::string msg =
      ErrorOf(TransposeOp(k, "images", "kernel"),
              {{"images", RandomTensor<double>({1, 3, 4, 4}, -1, 1, 1)},
               {"kernel", RandomTensor<double>({4, 2, 3, 3}, -1, 1, 1)}});
  ASSERT_FALSE(msg.empty()) << "expected an error";
  EXPECT_NE(msg.find("conv2d_transpose"), std::string::npos) << msg;
  EXPECT_NE(msg.find("images"), std::string::npos) << msg;
  EXPECT_NE(msg.find("kernel"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4, 2, 3, 3]"), std::string::npos) << msg;
}

TEST(Conv2dTransposeOp, UnreachableOutputSizeIsAnError) {
  // Stride 2 from 4 rows: 9 or 10 rows (kernel 3, no padding), not 11.
  TransposeCase k{1, 2, 4, 4, 2, 3, 3, 2, 2, 0, 0, 1, 1, 1, 2, 0};
  std::string msg =
      ErrorOf(TransposeOp(k), Inputs(k.InputShape(), k.FilterShape()));
  ASSERT_FALSE(msg.empty()) << "expected an error";
  EXPECT_NE(msg.find("output_size"), std::string::npos) << msg;
  EXPECT_NE(msg.find("11"), std::string::npos) << msg;
  EXPECT_NE(msg.find("9 to 10"), std::string::npos) << msg;
  // Below the smallest.
  auto small = MakeOp("conv2d_transpose", {{"Input", {"x"}}, {"Filter", {"w"}}},
                      {{"Output", {"y"}}},
                      {{"output_size", std::vector<int32_t>{5, 6}}});
  msg = ErrorOf(small, Inputs({1, 2, 4, 4}, {2, 2, 3, 3}));
  EXPECT_NE(msg.find("allowed 6"), std::string::npos) << msg;
  auto bad =
      MakeOp("conv2d_transpose", {{"Input", {"x"}}, {"Filter", {"w"}}},
             {{"Output", {"y"}}}, {{"output_size", std::vector<int32_t>{6}}});
  msg = ErrorOf(bad, Inputs({1, 2, 4, 4}, {2, 2, 3, 3}));
  EXPECT_NE(msg.find("two positive ints"), std::string::npos) << msg;
}

TEST(Conv2dTransposeOp, BadShapesAndAttrsAreRejected) {
  auto op = [](testing::TensorMap in, int groups,
               std::vector<int32_t> pad = {0, 0}) {
    return ErrorOf(
        MakeOp("conv2d_transpose", {{"Input", {"x"}}, {"Filter", {"w"}}},
               {{"Output", {"y"}}},
               {{"groups", int32_t{groups}}, {"paddings", pad}}),
        in);
  };
  std::string msg = op(Inputs({1, 3, 4, 4}, {3, 2, 3, 3}), 2);
  EXPECT_NE(msg.find("not a multiple of groups = 2"), std::string::npos) << msg;
  msg = op(Inputs({1, 2, 4, 4}, {2, 2, 3, 3}), 0);
  EXPECT_NE(msg.find("groups must be positive"), std::string::npos) << msg;
  msg = op(Inputs({2, 4, 4}, {2, 2, 3, 3}), 1);
  EXPECT_NE(msg.find("4-D"), std::string::npos) << msg;
  // A padding that crops the whole output away.
  msg = op(Inputs({1, 2, 1, 1}, {2, 2, 1, 1}), 1, {1, 0});
  EXPECT_NE(msg.find("gives no output along the height"), std::string::npos)
      << msg;
  msg = op(Inputs({1, 2, 4, 4}, {2, 2, 3, 3}), 1, {-1, 0});
  EXPECT_NE(msg.find("paddings"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
