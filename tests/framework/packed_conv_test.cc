// PackedConvImages on both of its kernels (the direct one and the panels
// with Eigen's kernel) against the seven-loop definition of a convolution,
// in double and float, on shapes that reach every edge of the direct
// kernel's tiles: short last vectors, tiles with fewer than three vectors,
// filter blocks of fewer than eight filters, depth blocks that start inside
// a kernel column, phases, dilation and groups.
#include "src/framework/math/packed_conv.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace fluid {
namespace math {
namespace {

struct Case {
  int64_t n, c, h, w, m, kh, kw, sh, sw, ph, pw, dh, dw, groups, depth_block;
};

std::string Describe(const Case& k) {
  return "n" + std::to_string(k.n) + " c" + std::to_string(k.c) + " " +
         std::to_string(k.h) + "x" + std::to_string(k.w) + " m" +
         std::to_string(k.m) + " k" + std::to_string(k.kh) + "x" +
         std::to_string(k.kw) + " s" + std::to_string(k.sh) + "x" +
         std::to_string(k.sw) + " p" + std::to_string(k.ph) + "x" +
         std::to_string(k.pw) + " d" + std::to_string(k.dh) + "x" +
         std::to_string(k.dw) + " g" + std::to_string(k.groups) + " block " +
         std::to_string(k.depth_block);
}

PackedConvShape ShapeOf(const Case& k) {
  PackedConvShape s;
  ConvGeometry& g = s.g;
  g.channels = k.c / k.groups;
  g.in_h = k.h;
  g.in_w = k.w;
  g.kernel_h = k.kh;
  g.kernel_w = k.kw;
  g.stride_h = k.sh;
  g.stride_w = k.sw;
  g.pad_h = k.ph;
  g.pad_w = k.pw;
  g.dilation_h = k.dh;
  g.dilation_w = k.dw;
  g.out_h = ConvOutputSize(k.h, k.kh, k.sh, k.ph, k.dh);
  g.out_w = ConvOutputSize(k.w, k.kw, k.sw, k.pw, k.dw);
  s.groups = k.groups;
  s.group_filters = k.m / k.groups;
  s.depth_block = k.depth_block;
  return s;
}

// The definition: y[b, o, i, j] = sum over the group's channels and the
// kernel of x at the tap, zero outside the image.
std::vector<double> Naive(const Case& k, const PackedConvShape& s,
                          const std::vector<double>& x,
                          const std::vector<double>& w) {
  const ConvGeometry& g = s.g;
  const int64_t cg = g.channels, mg = s.group_filters;
  std::vector<double> y(k.n * k.m * g.out_h * g.out_w, 0.0);
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t o = 0; o < k.m; ++o)
      for (int64_t i = 0; i < g.out_h; ++i)
        for (int64_t j = 0; j < g.out_w; ++j) {
          const int64_t c0 = o / mg * cg;
          double sum = 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t a = 0; a < k.kh; ++a)
              for (int64_t e = 0; e < k.kw; ++e) {
                const int64_t ih = i * k.sh - k.ph + a * k.dh;
                const int64_t iw = j * k.sw - k.pw + e * k.dw;
                if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                sum += x[((b * k.c + c0 + c) * k.h + ih) * k.w + iw] *
                       w[((o * cg + c) * k.kh + a) * k.kw + e];
              }
          y[((b * k.m + o) * g.out_h + i) * g.out_w + j] = sum;
        }
  return y;
}

template <typename T>
struct Aligned {
  explicit Aligned(int64_t n)
      : data(static_cast<T*>(std::aligned_alloc(
            64, (static_cast<size_t>(n) * sizeof(T) + 63) / 64 * 64))) {}
  ~Aligned() { std::free(data); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  T* data;
};

// y of PackedConvImages<T> on `kernel`, images fed `per` at a time.
template <typename T>
std::vector<double> Packed(const Case& k, PackedConvShape s,
                           PackedKernel kernel, int64_t per,
                           const std::vector<double>& x,
                           const std::vector<double>& w) {
  s.kernel = kernel;
  const int64_t in = k.c * k.h * k.w, out = k.m * s.g.out_h * s.g.out_w;
  std::vector<T> xt(x.begin(), x.end()), wt(w.begin(), w.end());
  // The output starts as garbage: every entry must be written.
  std::vector<T> y(k.n * out, T(1e30));
  Aligned<T> packed(PackedFilterSize(s));
  PackFilters(s, wt.data(), packed.data);
  Aligned<T> scratch(PackedConvScratchSize<T>(s, per));
  for (int64_t b = 0; b < k.n; b += per)
    PackedConvImages(s, packed.data, xt.data() + b * in, std::min(per, k.n - b),
                     scratch.data, y.data() + b * out);
  return std::vector<double>(y.begin(), y.end());
}

std::vector<Case> Cases() {
  // n, c, h, w, m, kh, kw, sh, sw, ph, pw, dh, dw, groups, depth_block
  return {
      {2, 3, 28, 28, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0},  // whole vectors
      {3, 4, 14, 14, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0},  // short last vector
      {4, 5, 7, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0},     // 7x7: 49 positions
      {1, 2, 5, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0},     // one short vector
      {2, 24, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0},    // 216 column rows
      {2, 6, 8, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 7},     // blocks of 7 rows
      {3, 4, 28, 28, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0},   // stride 2
      {2, 3, 13, 11, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0},   // odd, stride 2
      {2, 3, 12, 12, 5, 1, 1, 2, 2, 0, 0, 1, 1, 1, 0},   // 1x1 /2
      {2, 2, 15, 15, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 0},   // stride 3
      {2, 2, 10, 12, 3, 3, 3, 2, 1, 1, 1, 1, 1, 1, 0},   // stride 2 x 1
      {2, 3, 11, 10, 4, 3, 3, 1, 1, 2, 2, 2, 2, 1, 0},   // dilation 2
      {2, 3, 9, 10, 4, 5, 5, 1, 1, 2, 2, 1, 1, 1, 0},    // 5x5
      {2, 3, 9, 8, 4, 3, 1, 1, 1, 1, 0, 1, 1, 1, 0},     // 3x1
      {2, 3, 8, 9, 4, 1, 3, 1, 1, 0, 1, 1, 1, 1, 0},     // 1x3
      {2, 3, 7, 9, 5, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0},     // 1x1
      {2, 6, 12, 12, 12, 3, 3, 1, 1, 1, 1, 1, 1, 3, 0},  // groups
      {3, 4, 6, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4, 0},     // depthwise
      {2, 4, 16, 16, 18, 3, 3, 2, 2, 1, 1, 1, 1, 2, 5},  // all at once
  };
}

template <typename T>
void ExpectKernelsMatchDefinition(double tolerance) {
  for (const Case& k : Cases()) {
    SCOPED_TRACE(Describe(k));
    const PackedConvShape s = ShapeOf(k);
    ASSERT_TRUE(PackedConvApplies(s.g));
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> x(k.n * k.c * k.h * k.w), w(k.m * s.g.ColRows());
    for (double& v : x) v = u(rng);
    for (double& v : w) v = u(rng);
    const std::vector<double> want = Naive(k, s, x, w);
    // Both kernels sum each output's products in the same order, so they
    // agree to the bit, also in float.
    const std::vector<double> gebp =
        Packed<T>(k, s, PackedKernel::kGebp, k.n, x, w);
    for (PackedKernel kernel : {PackedKernel::kDirect, PackedKernel::kGebp})
      for (int64_t per : {int64_t(1), int64_t(2), k.n}) {
        SCOPED_TRACE(
            std::string(kernel == PackedKernel::kDirect ? "direct" : "gebp") +
            ", " + std::to_string(per) + " images a call");
        const std::vector<double> got = Packed<T>(k, s, kernel, per, x, w);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_NEAR(got[i], want[i], tolerance) << "at " << i;
          ASSERT_EQ(got[i], gebp[i]) << "at " << i;
        }
      }
  }
}

TEST(PackedConv, DoubleKernelsMatchDefinition) {
  ExpectKernelsMatchDefinition<double>(1e-12);
}

TEST(PackedConv, FloatKernelsMatchDefinition) {
  ExpectKernelsMatchDefinition<float>(2e-5);
}

// The filter gradient by the definition: dw[o, c, a, e] = the sum over
// images and output positions of dy[b, o, i, j] times x at the tap.
std::vector<double> NaiveFilterGrad(const Case& k, const PackedConvShape& s,
                                    const std::vector<double>& x,
                                    const std::vector<double>& dy) {
  const ConvGeometry& g = s.g;
  const int64_t cg = g.channels, mg = s.group_filters;
  std::vector<double> dw(k.m * g.ColRows(), 0.0);
  for (int64_t o = 0; o < k.m; ++o)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t a = 0; a < k.kh; ++a)
        for (int64_t e = 0; e < k.kw; ++e) {
          const int64_t c0 = o / mg * cg;
          double sum = 0;
          for (int64_t b = 0; b < k.n; ++b)
            for (int64_t i = 0; i < g.out_h; ++i)
              for (int64_t j = 0; j < g.out_w; ++j) {
                const int64_t ih = i * k.sh - k.ph + a * k.dh;
                const int64_t iw = j * k.sw - k.pw + e * k.dw;
                if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                sum += dy[((b * k.m + o) * g.out_h + i) * g.out_w + j] *
                       x[((b * k.c + c0 + c) * k.h + ih) * k.w + iw];
              }
          dw[((o * cg + c) * k.kh + a) * k.kw + e] = sum;
        }
  return dw;
}

// PackedFilterGrad, images fed `per` at a time (the later calls add).
template <typename T>
std::vector<double> FilterGrad(const Case& k, const PackedConvShape& s,
                               int64_t per, const std::vector<double>& x,
                               const std::vector<double>& dy) {
  const int64_t in = k.c * k.h * k.w, out = k.m * s.g.out_h * s.g.out_w;
  std::vector<T> xt(x.begin(), x.end()), dyt(dy.begin(), dy.end());
  std::vector<T> dw(k.m * s.g.ColRows(), T(1e30));
  Aligned<T> scratch(PackedFilterGradScratchSize<T>(s, per));
  for (int64_t b = 0; b < k.n; b += per)
    PackedFilterGrad(s, xt.data() + b * in, dyt.data() + b * out,
                     std::min(per, k.n - b), scratch.data, dw.data(), b > 0);
  return std::vector<double>(dw.begin(), dw.end());
}

template <typename T>
void ExpectFilterGradMatchesDefinition(double tolerance) {
  int64_t checked = 0;
  for (const Case& k : Cases()) {
    SCOPED_TRACE(Describe(k));
    PackedConvShape s = ShapeOf(k);
    s.kernel = PackedKernel::kDirect;
    if (!PackedFilterGradApplies<T>(s)) continue;
    ++checked;
    std::mt19937 rng(9);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> x(k.n * k.c * k.h * k.w);
    std::vector<double> dy(k.n * k.m * s.g.out_h * s.g.out_w);
    for (double& v : x) v = u(rng);
    for (double& v : dy) v = u(rng);
    const std::vector<double> want = NaiveFilterGrad(k, s, x, dy);
    for (int64_t per : {int64_t(1), int64_t(2), k.n}) {
      SCOPED_TRACE(std::to_string(per) + " images a call");
      const std::vector<double> got = FilterGrad<T>(k, s, per, x, dy);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], tolerance) << "at " << i;
    }
  }
#if defined(__AVX512F__)
  EXPECT_EQ(checked, static_cast<int64_t>(Cases().size()));
#else
  EXPECT_EQ(checked, 0);
#endif
}

TEST(PackedConv, DoubleFilterGradMatchesDefinition) {
  ExpectFilterGradMatchesDefinition<double>(1e-11);
}

TEST(PackedConv, FloatFilterGradMatchesDefinition) {
  ExpectFilterGradMatchesDefinition<float>(1e-4);
}

// kAuto takes the direct kernel only where the CPU has it and an image's
// positions fill whole vectors to within 1/16, and the filter gradient's
// only where they fill them exactly.
TEST(PackedConv, AutoTakesDirectKernelOnWholeVectors) {
  PackedConvShape s =
      ShapeOf({1, 16, 28, 28, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0});
  PackedConvShape small =
      ShapeOf({1, 64, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0});
  PackedConvShape mid =
      ShapeOf({1, 32, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0});
#if defined(__AVX512F__)
  EXPECT_TRUE(PackedDirect<float>(s));
  EXPECT_TRUE(PackedDirect<double>(s));
  EXPECT_TRUE(PackedDirect<float>(mid));     // 196 positions in 13 vectors
  EXPECT_FALSE(PackedDirect<float>(small));  // 49 positions in 4 vectors
  // The filter gradient's takes whole vectors only.
  EXPECT_TRUE(PackedFilterGradApplies<float>(s));
  EXPECT_TRUE(PackedFilterGradApplies<double>(s));
  EXPECT_FALSE(PackedFilterGradApplies<float>(mid));
  small.kernel = PackedKernel::kDirect;
  EXPECT_TRUE(PackedDirect<float>(small));
  EXPECT_TRUE(PackedFilterGradApplies<float>(small));
#else
  EXPECT_FALSE(PackedDirect<float>(s));
  EXPECT_FALSE(PackedDirect<float>(mid));
  small.kernel = PackedKernel::kDirect;
  EXPECT_FALSE(PackedDirect<float>(small));
  EXPECT_FALSE(PackedFilterGradApplies<float>(s));
  EXPECT_FALSE(PackedFilterGradApplies<float>(small));
#endif
  s.kernel = PackedKernel::kGebp;
  EXPECT_FALSE(PackedDirect<float>(s));
  EXPECT_FALSE(PackedFilterGradApplies<float>(s));
}

}  // namespace
}  // namespace math
}  // namespace fluid
