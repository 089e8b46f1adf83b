#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/image_op_cases.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::InterpCase;
using testing::InterpOp;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

// Fluid 1.x's rule, written out for one axis: the source position of
// output index k.
double Ratio(int in, int out, bool align_corners) {
  if (out <= 1) return 0;
  return align_corners ? double(in - 1) / (out - 1) : double(in) / out;
}

// Bilinear: the two input indices and the weight of the second.
void BilinearAxis(int k, int in, int out, const InterpCase& c, int* lo, int* hi,
                  double* lambda) {
  const double r = Ratio(in, out, c.align_corners);
  double src =
      !c.align_corners && c.align_mode == 0 ? r * (k + 0.5) - 0.5 : r * k;
  src = std::max(src, 0.0);
  *lo = std::min(int(std::floor(src)), in - 1);
  *hi = std::min(*lo + 1, in - 1);
  *lambda = src - *lo;
}

// Nearest: float32 positions, as Fluid computes them.
int NearestAxis(int k, int in, int out, bool align_corners) {
  const float r = out <= 1        ? 0.f
                  : align_corners ? float(in - 1) / float(out - 1)
                                  : float(in) / float(out);
  const float src = r * float(k);
  return std::min(int(align_corners ? src + 0.5f : src), in - 1);
}

std::vector<double> NaiveResize(const std::string& type, const InterpCase& c,
                                int oh, int ow, const std::vector<double>& x) {
  std::vector<double> y(size_t(c.n) * c.c * oh * ow);
  for (int q = 0; q < c.n * c.c; ++q)
    for (int k = 0; k < oh; ++k)
      for (int l = 0; l < ow; ++l) {
        const double* p = x.data() + size_t(q) * c.h * c.w;
        double v;
        if (type == "nearest_interp") {
          v = p[NearestAxis(k, c.h, oh, c.align_corners) * c.w +
                NearestAxis(l, c.w, ow, c.align_corners)];
        } else {
          int y0, y1, x0, x1;
          double ly, lx;
          BilinearAxis(k, c.h, oh, c, &y0, &y1, &ly);
          BilinearAxis(l, c.w, ow, c, &x0, &x1, &lx);
          v = (1 - ly) * ((1 - lx) * p[y0 * c.w + x0] + lx * p[y0 * c.w + x1]) +
              ly * ((1 - lx) * p[y1 * c.w + x0] + lx * p[y1 * c.w + x1]);
        }
        y[(size_t(q) * oh + k) * ow + l] = v;
      }
  return y;
}

// {n, c, h, w, out_h, out_w, align_corners, align_mode, scale}
std::vector<InterpCase> Cases() {
  return {
      {2, 3, 4, 5, 8, 10},                 // 2x up, align_corners
      {1, 2, 6, 7, 3, 4},                  // down
      {2, 2, 4, 5, 7, 3, false, 1},        // corners of pixels (asymmetric)
      {2, 2, 4, 5, 7, 3, false, 0},        // half-pixel centres
      {1, 3, 5, 3, 12, 9, false, 0},       // up, half-pixel
      {1, 2, 9, 8, 4, 3, false, 0},        // down, half-pixel
      {2, 1, 1, 4, 3, 1, true, 1},         // one-pixel input and output
      {1, 2, 5, 5, 5, 5, false, 0},        // same size
      {2, 2, 3, 4, 0, 0, true, 1, 2.5f},   // by scale: 7 x 10
      {1, 1, 5, 6, 0, 0, false, 0, 0.5f},  // by scale: 2 x 3
  };
}

void OutSizeOf(const InterpCase& c, int* oh, int* ow) {
  *oh = c.scale > 0 ? int(float(c.h) * c.scale) : c.out_h;
  *ow = c.scale > 0 ? int(float(c.w) * c.scale) : c.out_w;
}

void ExpectForwardMatches(const std::string& type, const InterpCase& c,
                          int threads) {
  SCOPED_TRACE(type + " " + Describe(c));
  Tensor x = RandomTensor<double>({c.n, c.c, c.h, c.w}, -1, 1, 3);
  Tensor y = RunOp(InterpOp(type, c), {{"x", x}}, threads)["y"];
  int oh, ow;
  OutSizeOf(c, &oh, &ow);
  ASSERT_EQ(y.shape(), Shape({c.n, c.c, oh, ow}));
  auto want = NaiveResize(type, c, oh, ow, ToVector<double>(x));
  auto got = ToVector<double>(y);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-12) << "at " << i;
}

TEST(InterpolateOp, BilinearMatchesNaive) {
  for (const auto& c : Cases()) ExpectForwardMatches("bilinear_interp", c, 1);
}

TEST(InterpolateOp, NearestMatchesNaive) {
  for (auto c : Cases()) {
    ExpectForwardMatches("nearest_interp", c, 1);
    c.align_corners = !c.align_corners;  // both ways for nearest
    ExpectForwardMatches("nearest_interp", c, 1);
  }
}

TEST(InterpolateOp, SameBitsWithThreads) {
  InterpCase c{4, 16, 20, 20, 37, 41, false, 0};
  Tensor x = RandomTensor<float>({4, 16, 20, 20}, -1, 1, 5);
  Tensor dy = RandomTensor<float>({4, 16, 37, 41}, -1, 1, 6);
  for (const std::string type : {"bilinear_interp", "nearest_interp"}) {
    auto op = InterpOp(type, c);
    EXPECT_EQ(ToVector<float>(RunOp(op, {{"x", x}}, 1)["y"]),
              ToVector<float>(RunOp(op, {{"x", x}}, 2)["y"]));
    auto grad = testing::InterpGradOp(type, c);
    EXPECT_EQ(ToVector<float>(RunOp(grad, {{"x", x}, {"dy", dy}}, 1)["dx"]),
              ToVector<float>(RunOp(grad, {{"x", x}, {"dy", dy}}, 2)["dx"]));
  }
}

TEST(InterpolateOp, Gradient) {
  for (const std::string type : {"bilinear_interp", "nearest_interp"})
    for (const auto& c : Cases()) {
      SCOPED_TRACE(type + " " + Describe(c));
      EXPECT_TRUE(CheckGradient(
          InterpOp(type, c),
          {{"x", RandomTensor<double>({c.n, c.c, c.h, c.w}, -1, 1, 9)}}));
    }
}

TEST(InterpolateOp, OutSizeTensorSetsTheSize) {
  InterpCase c{1, 2, 4, 4, 3, 3};  // the attrs say 3 x 3; OutSize wins
  auto op = InterpOp("bilinear_interp", c, "size");
  Tensor x = RandomTensor<double>({1, 2, 4, 4}, -1, 1, 7);
  Tensor y =
      RunOp(op, {{"x", x}, {"size", MakeTensor<int32_t>({2}, {6, 5})}})["y"];
  ASSERT_EQ(y.shape(), Shape({1, 2, 6, 5}));
  auto want = NaiveResize("bilinear_interp", c, 6, 5, ToVector<double>(x));
  auto got = ToVector<double>(y);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12);
  std::string msg =
      ErrorOf(op, {{"x", x}, {"size", MakeTensor<int32_t>({2}, {0, 5})}});
  EXPECT_NE(msg.find("[0, 5]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("OutSize 'size'"), std::string::npos) << msg;
  msg = ErrorOf(op, {{"x", x}, {"size", MakeTensor<int64_t>({2}, {6, 5})}});
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
}

TEST(InterpolateOp, CompileTimeShape) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{-1, 3, 10, -1});
  InterpCase c{1, 3, 10, 1, 0, 0, true, 1, 1.5f};
  auto op = InterpOp("nearest_interp", c);
  InferShapeAtCompileTime(op, block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "y")), Shape({-1, 3, 15, -1}));
  c.scale = 0;
  c.out_h = 4;
  c.out_w = 6;
  InferShapeAtCompileTime(InterpOp("bilinear_interp", c), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "y")), Shape({-1, 3, 4, 6}));
}

TEST(InterpolateOp, BadInputsAndAttrsAreRejected) {
  Tensor x = RandomTensor<double>({1, 2, 4, 4}, -1, 1, 1);
  InterpCase c{1, 2, 4, 4, 3, 3, false, 2};
  std::string msg = ErrorOf(InterpOp("bilinear_interp", c), {{"x", x}});
  EXPECT_NE(msg.find("align_mode"), std::string::npos) << msg;
  c = {1, 2, 4, 4, 0, 3};
  msg = ErrorOf(InterpOp("bilinear_interp", c), {{"x", x}});
  EXPECT_NE(msg.find("out_h"), std::string::npos) << msg;
  c = {1, 2, 4, 4, 0, 0, true, 1, 0.2f};
  msg = ErrorOf(InterpOp("nearest_interp", c), {{"x", x}});
  EXPECT_NE(msg.find("scale 0.2"), std::string::npos) << msg;
  c = {1, 2, 4, 4, 3, 3};
  msg = ErrorOf(InterpOp("nearest_interp", c),
                {{"x", RandomTensor<double>({2, 4, 4}, -1, 1, 1)}});
  EXPECT_NE(msg.find("4-D"), std::string::npos) << msg;
  auto nhwc = InterpOp("bilinear_interp", c, "", "NHWC");
  msg = ErrorOf(nhwc, {{"x", x}});
  EXPECT_NE(msg.find("NHWC is not supported"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
