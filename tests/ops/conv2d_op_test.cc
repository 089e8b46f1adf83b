#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/math/im2col.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::Conv2dOp;
using testing::ConvCase;
using testing::FilterShape;
using testing::GradCheckOptions;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

int OutSize(int in, int k, int s, int p, int d) {
  return (in + 2 * p - (d * (k - 1) + 1)) / s + 1;
}

// Direct seven-loop convolution, the definition itself.
std::vector<double> NaiveConv(const ConvCase& k, const std::vector<double>& x,
                              const std::vector<double>& f) {
  int oh = OutSize(k.h, k.kh, k.stride_h, k.pad_h, k.dil_h);
  int ow = OutSize(k.w, k.kw, k.stride_w, k.pad_w, k.dil_w);
  std::vector<double> y(static_cast<size_t>(k.n) * k.m * oh * ow, 0.0);
  for (int n = 0; n < k.n; ++n)
    for (int m = 0; m < k.m; ++m)
      for (int i = 0; i < oh; ++i)
        for (int j = 0; j < ow; ++j) {
          // Filter m sees channels [c0, c0 + cg) of its group.
          const int cg = k.c / k.groups, c0 = m / (k.m / k.groups) * cg;
          double s = 0;
          for (int c = 0; c < cg; ++c)
            for (int a = 0; a < k.kh; ++a)
              for (int b = 0; b < k.kw; ++b) {
                int ih = i * k.stride_h - k.pad_h + a * k.dil_h;
                int iw = j * k.stride_w - k.pad_w + b * k.dil_w;
                if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                s += x[((n * k.c + c0 + c) * k.h + ih) * k.w + iw] *
                     f[((m * cg + c) * k.kh + a) * k.kw + b];
              }
          y[((n * k.m + m) * oh + i) * ow + j] = s;
        }
  return y;
}

void ExpectForwardMatches(const ConvCase& k, int threads) {
  SCOPED_TRACE(Describe(k) + " threads " + std::to_string(threads));
  Tensor x = RandomTensor<double>({k.n, k.c, k.h, k.w}, -1, 1, 11);
  Tensor f = RandomTensor<double>(FilterShape(k), -1, 1, 12);
  Tensor y = RunOp(Conv2dOp(k), {{"x", x}, {"w", f}}, threads)["y"];
  int oh = OutSize(k.h, k.kh, k.stride_h, k.pad_h, k.dil_h);
  int ow = OutSize(k.w, k.kw, k.stride_w, k.pad_w, k.dil_w);
  ASSERT_EQ(y.shape(), Shape({k.n, k.m, oh, ow}));
  auto want = NaiveConv(k, ToVector<double>(x), ToVector<double>(f));
  auto got = ToVector<double>(y);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-12) << "at " << i;
}

std::vector<ConvCase> ForwardCases() {
  return {
      {1, 1, 5, 5, 1, 3, 3, 1, 1, 0, 0},
      {3, 2, 7, 6, 4, 3, 3, 2, 2, 1, 1},          // stride 2, padding 1
      {2, 3, 9, 8, 5, 5, 3, 1, 1, 2, 2},          // padding 2, odd sizes
      {3, 2, 6, 7, 3, 1, 1, 1, 1, 0, 0},          // 1x1: no im2col
      {2, 3, 7, 7, 2, 1, 1, 2, 2, 0, 0},          // 1x1 strided: im2col
      {1, 3, 8, 9, 2, 3, 3, 1, 2, 2, 1},          // asymmetric stride / pad
      {3, 2, 11, 10, 3, 3, 2, 2, 1, 1, 0, 2, 3},  // dilation
      {2, 1, 28, 28, 6, 5, 5, 1, 1, 2, 2},        // LeNet conv1 shape
      {3, 4, 5, 5, 2, 5, 5, 1, 1, 0, 0},          // kernel = image
  };
}

TEST(Conv2dOp, ForwardMatchesNaive) {
  for (const auto& k : ForwardCases()) ExpectForwardMatches(k, 1);
}

TEST(Conv2dOp, ForwardMatchesNaiveWithThreads) {
  for (const auto& k : ForwardCases()) ExpectForwardMatches(k, 2);
  // Large enough that the batch is cut into chunks run on the pool.
  ExpectForwardMatches({9, 4, 10, 10, 8, 3, 3, 1, 1, 1, 1}, 2);
  ExpectForwardMatches({5, 3, 12, 12, 8, 1, 1, 1, 1, 0, 0}, 2);
}

TEST(Conv2dOp, ForwardChunksBatchWithOneThread) {
  // Column matrices of 72 x 256 and 200 x 64 per image: a few images fill a
  // chunk, so the batch runs as several multi-image chunks, the last one
  // short. 72 x 1024: one image per chunk.
  ExpectForwardMatches({7, 8, 16, 16, 4, 3, 3, 1, 1, 1, 1}, 1);
  ExpectForwardMatches({7, 8, 12, 12, 3, 5, 5, 1, 1, 0, 0}, 1);
  ExpectForwardMatches({3, 8, 32, 32, 4, 3, 3, 1, 1, 1, 1}, 1);
  ExpectForwardMatches({7, 8, 16, 16, 4, 3, 3, 1, 1, 1, 1}, 2);
}

TEST(Conv2dOp, LargePointwiseSkipsIm2Col) {
  // One 8 x 9216 image fills a chunk: each image is its own column matrix.
  ConvCase k{3, 8, 96, 96, 2, 1, 1, 1, 1, 0, 0};
  ExpectForwardMatches(k, 1);
  ExpectForwardMatches(k, 2);
  // The gradients against their formulas: dX[n, c, p] = sum_m W[m, c]
  // dY[n, m, p], dW[m, c] = sum_{n, p} dY[n, m, p] X[n, c, p].
  const int n = 3, c = 8, m = 2, p = 96 * 96;
  Tensor x = RandomTensor<double>({n, c, 96, 96}, -1, 1, 13);
  Tensor w = RandomTensor<double>({m, c, 1, 1}, -1, 1, 14);
  Tensor dy = RandomTensor<double>({n, m, 96, 96}, -1, 1, 15);
  auto op =
      MakeOp("conv2d_grad",
             {{"Input", {"x"}}, {"Filter", {"w"}}, {"Output@GRAD", {"dy"}}},
             {{"Input@GRAD", {"dx"}}, {"Filter@GRAD", {"dw"}}});
  for (int threads : {1, 2}) {
    auto got = RunOp(op, {{"x", x}, {"w", w}, {"dy", dy}}, threads);
    auto xs = ToVector<double>(x), ws = ToVector<double>(w),
         dys = ToVector<double>(dy), dx = ToVector<double>(got["dx"]),
         dw = ToVector<double>(got["dw"]);
    for (int i = 0; i < n; ++i)
      for (int ci = 0; ci < c; ++ci)
        for (int q = 0; q < p; q += 97) {
          double want = 0;
          for (int mi = 0; mi < m; ++mi)
            want += ws[mi * c + ci] * dys[(i * m + mi) * p + q];
          ASSERT_NEAR(dx[(i * c + ci) * p + q], want, 1e-12);
        }
    for (int mi = 0; mi < m; ++mi)
      for (int ci = 0; ci < c; ++ci) {
        double want = 0;
        for (int i = 0; i < n; ++i)
          for (int q = 0; q < p; ++q)
            want += dys[(i * m + mi) * p + q] * xs[(i * c + ci) * p + q];
        ASSERT_NEAR(dw[mi * c + ci], want, 1e-9);
      }
  }
}

TEST(Conv2dOp, Im2ColThenCol2ImIsAdjoint) {
  // <im2col(x), c> == <x, col2im(c)> for random x, c.
  math::ConvGeometry g;
  g.channels = 2;
  g.in_h = 7;
  g.in_w = 6;
  g.kernel_h = 3;
  g.kernel_w = 2;
  g.stride_h = 2;
  g.stride_w = 1;
  g.pad_h = 1;
  g.pad_w = 2;
  g.dilation_h = 1;
  g.dilation_w = 2;
  g.out_h = math::ConvOutputSize(7, 3, 2, 1, 1);
  g.out_w = math::ConvOutputSize(6, 2, 1, 2, 2);
  auto x = ToVector<double>(RandomTensor<double>({g.InputSize()}, -1, 1, 3));
  auto c = ToVector<double>(
      RandomTensor<double>({g.ColRows() * g.ColCols()}, -1, 1, 4));
  std::vector<double> col(c.size()), im(x.size());
  math::Im2Col(g, x.data(), g.ColCols(), col.data());
  math::Col2Im(g, c.data(), g.ColCols(), im.data());
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < c.size(); ++i) lhs += col[i] * c[i];
  for (size_t i = 0; i < x.size(); ++i) rhs += x[i] * im[i];
  EXPECT_NEAR(lhs, rhs, 1e-12);
  EXPECT_NE(lhs, 0.0);
}

TEST(Conv2dOp, FloatMatchesDouble) {
  ConvCase k{3, 3, 9, 9, 4, 3, 3, 2, 2, 1, 1};
  auto op = Conv2dOp(k);
  Tensor xd = RandomTensor<double>({3, 3, 9, 9}, -1, 1, 5);
  Tensor fd = RandomTensor<double>({4, 3, 3, 3}, -1, 1, 6);
  Tensor xf = RandomTensor<float>({3, 3, 9, 9}, -1, 1, 5);
  Tensor ff = RandomTensor<float>({4, 3, 3, 3}, -1, 1, 6);
  auto d = ToVector<double>(RunOp(op, {{"x", xd}, {"w", fd}})["y"]);
  auto f = ToVector<float>(RunOp(op, {{"x", xf}, {"w", ff}})["y"]);
  ASSERT_EQ(d.size(), f.size());
  for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-5);
}

void ExpectGradient(const ConvCase& k, int threads) {
  SCOPED_TRACE(Describe(k) + " threads " + std::to_string(threads));
  GradCheckOptions opt;
  opt.threads = threads;
  EXPECT_TRUE(CheckGradient(
      Conv2dOp(k),
      {{"x", RandomTensor<double>({k.n, k.c, k.h, k.w}, -1, 1, 21)},
       {"w", RandomTensor<double>(FilterShape(k), -1, 1, 22)}},
      opt));
}

TEST(Conv2dOp, Gradient) {
  ExpectGradient({2, 2, 5, 4, 3, 3, 3, 1, 1, 1, 1}, 1);
  ExpectGradient({1, 2, 7, 6, 2, 3, 3, 2, 2, 0, 0}, 1);        // stride 2
  ExpectGradient({3, 1, 6, 5, 2, 3, 2, 2, 1, 2, 1}, 1);        // padding 2
  ExpectGradient({2, 3, 4, 5, 2, 1, 1, 1, 1, 0, 0}, 1);        // 1x1
  ExpectGradient({2, 2, 7, 7, 2, 2, 2, 1, 2, 1, 0, 2, 2}, 1);  // dilation
}

TEST(Conv2dOp, GradientOverSeveralChunks) {
  // 200 x 64 column matrix per image: chunks of 4 and 3 images, one thread.
  ExpectGradient({7, 8, 12, 12, 1, 5, 5, 1, 1, 0, 0}, 1);
}

TEST(Conv2dOp, GradientWithThreads) {
  // Several chunks on the pool: the filter gradient is a sum of partials.
  ExpectGradient({4, 2, 12, 12, 4, 3, 3, 1, 1, 0, 0}, 2);
  ExpectGradient({3, 3, 8, 8, 16, 1, 1, 1, 1, 0, 0}, 2);
}

TEST(Conv2dOp, GradientOfFilterOnly) {
  GradCheckOptions opt;
  opt.wrt = {"w"};
  ConvCase k{2, 2, 6, 6, 3, 3, 3, 1, 1, 1, 1};
  EXPECT_TRUE(
      CheckGradient(Conv2dOp(k),
                    {{"x", RandomTensor<double>({2, 2, 6, 6}, -1, 1, 31)},
                     {"w", RandomTensor<double>({3, 2, 3, 3}, -1, 1, 32)}},
                    opt));
}

// Grouped cases: {n, c, h, w, m, kh, kw, sh, sw, ph, pw, dh, dw, groups}.
std::vector<ConvCase> GroupedCases() {
  return {
      {2, 4, 6, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2},
      {3, 6, 7, 7, 3, 3, 2, 2, 1, 1, 0, 1, 2, 3},    // strided, dilated
      {2, 4, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4},    // depthwise
      {2, 4, 5, 6, 8, 1, 1, 1, 1, 0, 0, 1, 1, 2},    // pointwise
      {1, 6, 6, 6, 6, 1, 1, 1, 1, 0, 0, 1, 1, 3},    // pointwise, one image
      {7, 8, 16, 16, 4, 3, 3, 1, 1, 1, 1, 1, 1, 2},  // multi-image chunks
  };
}

TEST(Conv2dOp, GroupedForwardMatchesNaive) {
  for (const auto& k : GroupedCases()) {
    ExpectForwardMatches(k, 1);
    ExpectForwardMatches(k, 2);
  }
}

TEST(Conv2dOp, GroupedGradient) {
  for (const auto& k : GroupedCases()) {
    if (k.n * k.c * k.h * k.w > 2000) continue;  // numeric checks are slow
    ExpectGradient(k, 1);
  }
  ExpectGradient({4, 4, 8, 8, 4, 3, 3, 1, 1, 0, 0, 1, 1, 2}, 2);
}

// Unit-stride sweeps whose output is as wide as the image take the packed
// path (math/packed_conv.h): the forward pass, and the input gradient as the
// convolution of dY by the turned filters. The cases cover images smaller
// than a kernel panel (one panel spans several images), panels running past
// the batch, column rows in more than one depth block (C kh kw or M kh kw
// above 192), asymmetric, unpadded and dilated kernels, and groups. Strided
// sweeps take it over the image's phases (the forward pass and the filter
// gradient's column matrix): stride 2 and 3, odd sizes (the last phase row
// and column short), a 1x1 kernel (one phase), dilation and groups. Where
// W splits evenly into the phases, the input gradient is computed phase by
// phase on the packed path too (stride 2 and 3, 2 x 1, groups; a 1x1 kernel
// leaves the phases no tap reaches at zero).
std::vector<ConvCase> PackedCases() {
  return {
      {5, 3, 3, 3, 4, 3, 3, 1, 1, 1, 1},           // 9 positions an image
      {3, 2, 4, 5, 3, 3, 3, 1, 1, 1, 1},           // 20
      {2, 24, 7, 7, 5, 3, 3, 1, 1, 1, 1},          // 216 column rows
      {2, 3, 5, 5, 24, 3, 3, 1, 1, 1, 1},          // dX: 216 column rows
      {2, 3, 6, 5, 4, 3, 1, 1, 1, 1, 0},           // 3x1
      {2, 3, 5, 6, 4, 1, 3, 1, 1, 0, 1},           // 1x3
      {2, 2, 7, 6, 3, 3, 3, 1, 1, 0, 1},           // Ho < H
      {2, 2, 9, 8, 3, 3, 3, 1, 1, 2, 2, 2, 2},     // dilation 2
      {3, 4, 6, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2},  // groups
      {2, 4, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4},  // depthwise
      {3, 5, 4, 4, 6, 1, 1, 1, 1, 0, 0},           // 1x1
      {3, 2, 28, 28, 4, 3, 3, 1, 1, 1, 1},         // 17 panels an image
      {2, 3, 28, 28, 4, 3, 3, 2, 2, 1, 1},         // resnet's /2
      {4, 3, 7, 7, 3, 3, 3, 2, 2, 1, 1},           // 7 -> 4
      {3, 4, 9, 8, 5, 1, 1, 2, 2, 0, 0},           // 1x1 /2
      {2, 2, 9, 9, 3, 3, 3, 3, 3, 1, 1},           // stride 3
      {2, 2, 8, 9, 3, 3, 3, 2, 1, 1, 1},           // stride 2 x 1
      {2, 2, 10, 10, 3, 3, 3, 2, 2, 2, 2, 2, 2},   // /2, dilation 2
      {3, 4, 8, 8, 6, 3, 3, 2, 2, 1, 1, 1, 1, 2},  // /2, groups
      {2, 2, 12, 12, 3, 3, 3, 2, 2, 1, 1},         // dX phase by phase
      {2, 3, 6, 6, 4, 1, 1, 2, 2, 0, 0},           // 1x1 /2: zero phases
  };
}

TEST(Conv2dOp, PackedForwardMatchesNaive) {
  for (const auto& k : PackedCases()) {
    ExpectForwardMatches(k, 1);
    ExpectForwardMatches(k, 2);
  }
}

TEST(Conv2dOp, PackedGradient) {
  for (const auto& k : PackedCases()) {
    if (k.n * k.c * k.h * k.w > 2500) continue;  // numeric checks are slow
    ExpectGradient(k, 1);
  }
  ExpectGradient({4, 3, 5, 5, 4, 3, 3, 1, 1, 1, 1}, 2);
  ExpectGradient({2, 2, 12, 12, 3, 3, 3, 2, 2, 1, 1}, 2);  // phases, pool
}

// float (panels of 48 rows on AVX-512) against double (24) on the packed
// path, both ways through it.
TEST(Conv2dOp, PackedFloatMatchesDouble) {
  Shape xs{3, 20, 7, 7}, ws{24, 20, 3, 3}, ys{3, 24, 7, 7};
  auto grad =
      MakeOp("conv2d_grad",
             {{"Input", {"x"}}, {"Filter", {"w"}}, {"Output@GRAD", {"y@GRAD"}}},
             {{"Input@GRAD", {"x@GRAD"}}, {"Filter@GRAD", {"w@GRAD"}}},
             {{"paddings", std::vector<int32_t>{1, 1}}});
  auto run = [&](auto zero) {
    using T = decltype(zero);
    return RunOp(grad, {{"x", RandomTensor<T>(xs, -1, 1, 41)},
                        {"w", RandomTensor<T>(ws, -1, 1, 42)},
                        {"y@GRAD", RandomTensor<T>(ys, -1, 1, 43)}});
  };
  auto d = run(0.0), f = run(0.0f);
  for (const char* name : {"x@GRAD", "w@GRAD"}) {
    auto dv = ToVector<double>(d[name]);
    auto fv = ToVector<float>(f[name]);
    ASSERT_EQ(dv.size(), fv.size());
    for (size_t i = 0; i < dv.size(); ++i)
      ASSERT_NEAR(fv[i], dv[i], 2e-4) << name << " at " << i;
  }
}

TEST(Conv2dOp, CompileTimeShapeKeepsUnknownBatch) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "img", DataType::kFloat32, Shape{-1, 1, 28, 28});
  AddVarDesc(block, "w", DataType::kFloat32, Shape{20, 1, 5, 5});
  auto op = MakeOp("conv2d", {{"Input", {"img"}}, {"Filter", {"w"}}},
                   {{"Output", {"y"}}},
                   {{"strides", std::vector<int32_t>{2, 1}},
                    {"paddings", std::vector<int32_t>{2, 0}}});
  InferShapeAtCompileTime(op, block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "y")), Shape({-1, 20, 14, 24}));
  EXPECT_EQ(VarDtype(GetVarDesc(*block, "y")), DataType::kFloat32);
}

using testing::ErrorOf;

TEST(Conv2dOp, ChannelMismatchNamesVars) {
  ConvCase k{1, 3, 6, 6, 2, 3, 3, 1, 1, 0, 0};
  std::string msg =
      ErrorOf(Conv2dOp(k, "images", "kernel"),
              {{"images", RandomTensor<double>({1, 3, 6, 6}, -1, 1, 1)},
               {"kernel", RandomTensor<double>({2, 4, 3, 3}, -1, 1, 1)}});
  ASSERT_FALSE(msg.empty()) << "expected an error";
  EXPECT_NE(msg.find("conv2d"), std::string::npos) << msg;
  EXPECT_NE(msg.find("images"), std::string::npos) << msg;
  EXPECT_NE(msg.find("kernel"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 4, 3, 3]"), std::string::npos) << msg;
}

TEST(Conv2dOp, BadRankNamesVar) {
  ConvCase k{1, 3, 6, 6, 2, 3, 3, 1, 1, 0, 0};
  std::string msg =
      ErrorOf(Conv2dOp(k, "flat", "kernel"),
              {{"flat", RandomTensor<double>({3, 6, 6}, -1, 1, 1)},
               {"kernel", RandomTensor<double>({2, 3, 3, 3}, -1, 1, 1)}});
  ASSERT_FALSE(msg.empty()) << "expected an error";
  EXPECT_NE(msg.find("flat"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4-D"), std::string::npos) << msg;
}

TEST(Conv2dOp, ImageSmallerThanKernelIsAnError) {
  ConvCase k{1, 1, 3, 3, 1, 5, 5, 1, 1, 0, 0};
  std::string msg =
      ErrorOf(Conv2dOp(k, "tiny", "big"),
              {{"tiny", RandomTensor<double>({1, 1, 3, 3}, -1, 1, 1)},
               {"big", RandomTensor<double>({1, 1, 5, 5}, -1, 1, 1)}});
  ASSERT_FALSE(msg.empty()) << "expected an error";
  EXPECT_NE(msg.find("tiny"), std::string::npos) << msg;
  EXPECT_NE(msg.find("big"), std::string::npos) << msg;
}

TEST(Conv2dOp, BadGroupsAndAttrsAreRejected) {
  auto in =
      testing::TensorMap{{"x", RandomTensor<double>({1, 2, 6, 6}, -1, 1, 1)},
                         {"w", RandomTensor<double>({2, 2, 3, 3}, -1, 1, 1)}};
  // 2 channels in groups of 2 need filters of 1 channel.
  auto grouped = MakeOp("conv2d", {{"Input", {"x"}}, {"Filter", {"w"}}},
                        {{"Output", {"y"}}}, {{"groups", 2}});
  std::string msg = ErrorOf(grouped, in);
  EXPECT_NE(msg.find("groups = 2"), std::string::npos) << msg;
  // 3 filters do not split into 2 groups.
  auto odd =
      testing::TensorMap{{"x", RandomTensor<double>({1, 2, 6, 6}, -1, 1, 1)},
                         {"w", RandomTensor<double>({3, 1, 3, 3}, -1, 1, 1)}};
  msg = ErrorOf(grouped, odd);
  EXPECT_NE(msg.find("not a multiple of groups"), std::string::npos) << msg;
  auto zero = MakeOp("conv2d", {{"Input", {"x"}}, {"Filter", {"w"}}},
                     {{"Output", {"y"}}}, {{"groups", 0}});
  msg = ErrorOf(zero, in);
  EXPECT_NE(msg.find("groups must be positive"), std::string::npos) << msg;
  auto zero_stride =
      MakeOp("conv2d", {{"Input", {"x"}}, {"Filter", {"w"}}},
             {{"Output", {"y"}}}, {{"strides", std::vector<int32_t>{0, 1}}});
  msg = ErrorOf(zero_stride, in);
  EXPECT_NE(msg.find("strides"), std::string::npos) << msg;
}

// Entry (r, col) of the column matrix by its definition: the pixel tap r
// sees at output col, or 0 in the padding.
double Im2ColEntry(const math::ConvGeometry& g, const std::vector<double>& x,
                   int64_t r, int64_t col) {
  const int64_t kj = r % g.kernel_w, ki = r / g.kernel_w % g.kernel_h;
  const int64_t c = r / (g.kernel_w * g.kernel_h);
  const int64_t ih = col / g.out_w * g.stride_h + ki * g.dilation_h - g.pad_h;
  const int64_t iw = col % g.out_w * g.stride_w + kj * g.dilation_w - g.pad_w;
  if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) return 0;
  return x[(c * g.in_h + ih) * g.in_w + iw];
}

TEST(Conv2dOp, SameWidthSweepsMatchDefinition) {
  // Unit stride with out_w == in_w takes the shifted-run paths: kernels 3
  // and 5, dilation, unequal padding, a one-pixel-wide and a one-row image.
  // Im2Col against the definition; Col2ImScratch against Col2Im.
  struct Case {
    int64_t h, w, kh, kw, ph, pw, dh, dw;
  };
  for (const Case& k :
       {Case{5, 6, 3, 3, 1, 1, 1, 1}, Case{4, 7, 5, 5, 2, 2, 1, 1},
        Case{6, 5, 3, 3, 0, 2, 1, 2}, Case{3, 1, 3, 1, 1, 0, 1, 1},
        Case{1, 4, 1, 3, 0, 1, 1, 1}, Case{2, 3, 3, 3, 2, 1, 2, 1}}) {
    math::ConvGeometry g;
    g.channels = 2;
    g.in_h = k.h;
    g.in_w = k.w;
    g.kernel_h = k.kh;
    g.kernel_w = k.kw;
    g.pad_h = k.ph;
    g.pad_w = k.pw;
    g.dilation_h = k.dh;
    g.dilation_w = k.dw;
    g.out_h = math::ConvOutputSize(k.h, k.kh, 1, k.ph, k.dh);
    g.out_w = math::ConvOutputSize(k.w, k.kw, 1, k.pw, k.dw);
    ASSERT_EQ(g.out_w, g.in_w);
    auto x = ToVector<double>(RandomTensor<double>({g.InputSize()}, -1, 1, 7));
    // Two images side by side, as the kernels lay them out.
    const int64_t ld = 2 * g.ColCols();
    std::vector<double> col(g.ColRows() * ld, 99.0);
    math::Im2Col(g, x.data(), ld, col.data());
    for (int64_t r = 0; r < g.ColRows(); ++r)
      for (int64_t j = 0; j < g.ColCols(); ++j)
        ASSERT_EQ(col[r * ld + j], Im2ColEntry(g, x, r, j))
            << "h " << k.h << " w " << k.w << " row " << r << " col " << j;
    EXPECT_EQ(col[g.ColCols()], 99.0);  // the second image's entries
    auto dcol =
        ToVector<double>(RandomTensor<double>({g.ColRows() * ld}, -1, 1, 8));
    std::vector<double> want(x.size()), got(x.size());
    math::Col2Im(g, dcol.data(), ld, want.data());
    math::Col2ImScratch(g, dcol.data(), ld, got.data());
    EXPECT_EQ(got, want);
  }
}

}  // namespace
}  // namespace fluid
