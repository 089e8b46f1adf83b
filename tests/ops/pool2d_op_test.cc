#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::GradCheckOptions;
using testing::MakeTensor;
using testing::Pool2dOp;
using testing::PoolCase;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

// Floor: (in + 2p - k) / s + 1. Ceil, as PyTorch writes it: rounded up,
// less one when the last window would start in the right padding.
int OutSize(int in, int k, int s, int p, bool ceil_mode = false) {
  if (!ceil_mode) return (in + 2 * p - k) / s + 1;
  int out = static_cast<int>(std::ceil((in + 2.0 * p - k) / s)) + 1;
  return (out - 1) * s >= in + p ? out - 1 : out;
}

// The definition: each window over the padded image, padding excluded from
// the max and (when exclusive) from the count; a non-exclusive count is the
// taps inside the padded image (kh * kw but for a ceil_mode window that
// hangs past the right padding).
std::vector<double> NaivePool(const PoolCase& k, const std::vector<double>& x,
                              bool is_max, bool exclusive,
                              bool ceil_mode = false) {
  int oh = OutSize(k.h, k.kh, k.stride_h, k.pad_h, ceil_mode);
  int ow = OutSize(k.w, k.kw, k.stride_w, k.pad_w, ceil_mode);
  std::vector<double> y;
  for (int p = 0; p < k.n * k.c; ++p)
    for (int i = 0; i < oh; ++i)
      for (int j = 0; j < ow; ++j) {
        double best = -1e300, sum = 0;
        int count = 0, padded = 0;
        for (int a = 0; a < k.kh; ++a)
          for (int b = 0; b < k.kw; ++b) {
            int ih = i * k.stride_h - k.pad_h + a;
            int iw = j * k.stride_w - k.pad_w + b;
            padded += ih < k.h + k.pad_h && iw < k.w + k.pad_w;
            if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
            double v = x[(p * k.h + ih) * k.w + iw];
            best = std::max(best, v);
            sum += v;
            ++count;
          }
        y.push_back(is_max ? best : sum / (exclusive ? count : padded));
      }
  return y;
}

std::vector<PoolCase> Cases() {
  return {
      {1, 1, 4, 4, 2, 2, 2, 2, 0, 0},    // LeNet-style 2x2 / 2
      {3, 2, 7, 5, 3, 3, 2, 2, 1, 1},    // stride 2, padding 1, odd sizes
      {2, 3, 9, 8, 5, 5, 1, 2, 2, 2},    // padding 2
      {1, 2, 6, 7, 3, 2, 1, 1, 0, 1},    // asymmetric
      {2, 2, 5, 5, 5, 5, 1, 1, 0, 0},    // window = image
      {3, 1, 3, 3, 1, 1, 1, 1, 0, 0},    // identity
      {2, 3, 7, 9, 2, 2, 2, 2, 0, 0},    // 2x2 tiles, a row and a column left
      {1, 2, 10, 11, 3, 3, 3, 3, 0, 0},  // 3x3 tiles
      {2, 2, 9, 9, 3, 3, 1, 1, 1, 1},    // 3x3, stride 1, padding 1
      {1, 2, 8, 13, 2, 4, 2, 3, 1, 2},   // wide windows, padding
  };
}

proto::OpDesc CeilPool2dOp(const PoolCase& k, const std::string& type,
                           bool exclusive) {
  proto::OpDesc op = Pool2dOp(k, type, exclusive);
  SetOpAttr(&op, "ceil_mode", true);
  return op;
}

void ExpectForward(const PoolCase& k, const std::string& type, bool exclusive,
                   int threads, bool ceil_mode = false) {
  SCOPED_TRACE(Describe(k) + " " + type + (exclusive ? " exclusive" : "") +
               (ceil_mode ? " ceil_mode" : "") + " threads " +
               std::to_string(threads));
  Tensor x = RandomTensor<double>({k.n, k.c, k.h, k.w}, -1, 1, 41);
  auto op = ceil_mode ? CeilPool2dOp(k, type, exclusive)
                      : Pool2dOp(k, type, exclusive);
  Tensor y = RunOp(op, {{"x", x}}, threads)["y"];
  int oh = OutSize(k.h, k.kh, k.stride_h, k.pad_h, ceil_mode);
  int ow = OutSize(k.w, k.kw, k.stride_w, k.pad_w, ceil_mode);
  ASSERT_EQ(y.shape(), Shape({k.n, k.c, oh, ow}));
  auto want =
      NaivePool(k, ToVector<double>(x), type == "max", exclusive, ceil_mode);
  auto got = ToVector<double>(y);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-12) << "at " << i;
}

TEST(Pool2dOp, MaxForwardMatchesNaive) {
  for (const auto& k : Cases()) ExpectForward(k, "max", true, 1);
}

TEST(Pool2dOp, AvgForwardMatchesNaive) {
  for (const auto& k : Cases()) {
    ExpectForward(k, "avg", true, 1);
    ExpectForward(k, "avg", false, 1);
  }
}

// Values 0.01 apart in random order: no ties, and no perturbation of the
// gradient checker can reorder two of them.
Tensor DistinctTensor(const Shape& shape, uint64_t seed) {
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.01 * i - 0.005 * v.size();
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  return MakeTensor<double>(shape, v);
}

// Cases where rounding up adds a window (and one, 5 / 2 / pad 1, where
// the extra window would start in the right padding and is dropped).
std::vector<PoolCase> CeilCases() {
  return {
      {2, 3, 7, 9, 2, 2, 2, 2, 0, 0},    // 2x2 tiles, a row and a column left
      {1, 2, 5, 5, 2, 2, 2, 2, 1, 1},    // the last window would be padding
      {2, 2, 8, 7, 3, 3, 2, 2, 1, 1},    // overlapping, padded
      {1, 2, 10, 11, 3, 3, 3, 3, 0, 0},  // 3x3 tiles, ragged
      {1, 1, 6, 9, 3, 2, 2, 3, 1, 0},    // rectangular, asymmetric
  };
}

TEST(Pool2dOp, CeilModeForwardMatchesNaive) {
  for (const auto& k : CeilCases()) {
    ExpectForward(k, "max", true, 1, true);
    ExpectForward(k, "avg", true, 1, true);
    ExpectForward(k, "avg", false, 1, true);
  }
}

TEST(Pool2dOp, CeilModeGradient) {
  for (const auto& k : CeilCases()) {
    SCOPED_TRACE(Describe(k));
    Shape shape{k.n, k.c, k.h, k.w};
    EXPECT_TRUE(CheckGradient(CeilPool2dOp(k, "max", true),
                              {{"x", DistinctTensor(shape, 55)}}));
    for (bool exclusive : {true, false})
      EXPECT_TRUE(
          CheckGradient(CeilPool2dOp(k, "avg", exclusive),
                        {{"x", RandomTensor<double>(shape, -1, 1, 56)}}));
  }
}

TEST(Pool2dOp, CeilModeCompileTimeShape) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{-1, 6, 7, 5});
  InferShapeAtCompileTime(
      CeilPool2dOp({0, 0, 0, 0, 2, 2, 2, 2, 0, 0}, "max", true), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "y")), Shape({-1, 6, 4, 3}));
}

TEST(Pool2dOp, ForwardWithThreads) {
  PoolCase big{8, 16, 24, 24, 3, 3, 2, 2, 1, 1};
  ExpectForward(big, "max", true, 2);
  ExpectForward(big, "avg", true, 2);
  ExpectForward(big, "avg", false, 2);
}

TEST(Pool2dOp, ExclusiveDiffersOnlyAtPaddedWindows) {
  // A constant image: exclusive averages are all 1; inclusive ones shrink
  // where the window hangs over the padding. Guards against a kernel that
  // ignores the attr.
  PoolCase k{1, 1, 4, 4, 3, 3, 1, 1, 1, 1};
  Tensor x = MakeTensor<double>({1, 1, 4, 4}, std::vector<double>(16, 1.0));
  auto ex = ToVector<double>(RunOp(Pool2dOp(k, "avg", true), {{"x", x}})["y"]);
  auto in = ToVector<double>(RunOp(Pool2dOp(k, "avg", false), {{"x", x}})["y"]);
  for (double v : ex) EXPECT_DOUBLE_EQ(v, 1.0);
  EXPECT_DOUBLE_EQ(in[0], 4.0 / 9.0);  // corner: 2x2 of 3x3 inside
  EXPECT_DOUBLE_EQ(in[1], 6.0 / 9.0);  // edge
  EXPECT_DOUBLE_EQ(in[5], 1.0);        // interior
}

TEST(Pool2dOp, GlobalPooling) {
  Tensor x = RandomTensor<double>({2, 3, 5, 4}, -1, 1, 42);
  auto xs = ToVector<double>(x);
  for (std::string type : {"max", "avg"}) {
    auto op = MakeOp("pool2d", {{"X", {"x"}}}, {{"Out", {"y"}}},
                     {{"pooling_type", type},
                      {"global_pooling", true},
                      {"ksize", std::vector<int32_t>{1, 1}}});
    Tensor y = RunOp(op, {{"x", x}})["y"];
    ASSERT_EQ(y.shape(), Shape({2, 3, 1, 1}));
    auto got = ToVector<double>(y);
    for (int p = 0; p < 6; ++p) {
      auto b = xs.begin() + p * 20, e = b + 20;
      double want = type == "max" ? *std::max_element(b, e)
                                  : std::accumulate(b, e, 0.0) / 20;
      EXPECT_NEAR(got[p], want, 1e-12) << type << " plane " << p;
    }
  }
}

TEST(Pool2dOp, FloatMatchesDouble) {
  PoolCase k{2, 3, 9, 9, 3, 3, 2, 2, 1, 1};
  for (std::string type : {"max", "avg"}) {
    auto op = Pool2dOp(k, type);
    auto d = ToVector<double>(
        RunOp(op, {{"x", RandomTensor<double>({2, 3, 9, 9}, -1, 1, 7)}})["y"]);
    auto f = ToVector<float>(
        RunOp(op, {{"x", RandomTensor<float>({2, 3, 9, 9}, -1, 1, 7)}})["y"]);
    ASSERT_EQ(d.size(), f.size());
    for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-6);
  }
}

TEST(Pool2dOp, MaxGradient) {
  for (const auto& k : Cases()) {
    SCOPED_TRACE(Describe(k));
    EXPECT_TRUE(CheckGradient(
        Pool2dOp(k, "max"), {{"x", DistinctTensor({k.n, k.c, k.h, k.w}, 51)}}));
  }
}

TEST(Pool2dOp, AvgGradient) {
  for (const auto& k : Cases()) {
    SCOPED_TRACE(Describe(k));
    for (bool exclusive : {true, false})
      EXPECT_TRUE(CheckGradient(
          Pool2dOp(k, "avg", exclusive),
          {{"x", RandomTensor<double>({k.n, k.c, k.h, k.w}, -1, 1, 52)}}));
  }
}

TEST(Pool2dOp, GradientWithThreads) {
  PoolCase k{4, 8, 12, 12, 3, 3, 2, 2, 1, 1};
  GradCheckOptions opt;
  opt.threads = 2;
  EXPECT_TRUE(CheckGradient(Pool2dOp(k, "max"),
                            {{"x", DistinctTensor({4, 8, 12, 12}, 53)}}, opt));
  EXPECT_TRUE(CheckGradient(
      Pool2dOp(k, "avg"),
      {{"x", RandomTensor<double>({4, 8, 12, 12}, -1, 1, 54)}}, opt));
}

TEST(Pool2dOp, MaxGradientTiesGoToFirstMax) {
  // All-equal 1x1x2x3 image, 2x2 windows with stride 1: the first max of
  // window (0, 0) is x[0, 0] and of window (0, 1) is x[0, 1].
  Tensor x = MakeTensor<double>({1, 1, 2, 3}, {5, 5, 5, 5, 5, 5});
  Tensor out = MakeTensor<double>({1, 1, 1, 2}, {5, 5});
  Tensor dy = MakeTensor<double>({1, 1, 1, 2}, {1.5, 2.5});
  auto op = MakeOp("pool2d_grad",
                   {{"X", {"x"}}, {"Out", {"out"}}, {"Out@GRAD", {"dy"}}},
                   {{"X@GRAD", {"dx"}}},
                   {{"pooling_type", std::string("max")},
                    {"ksize", std::vector<int32_t>{2, 2}},
                    {"strides", std::vector<int32_t>{1, 1}}});
  auto dx =
      ToVector<double>(RunOp(op, {{"x", x}, {"out", out}, {"dy", dy}})["dx"]);
  EXPECT_EQ(dx, (std::vector<double>{1.5, 2.5, 0, 0, 0, 0}));
}

TEST(Pool2dOp, TiledMaxGradientTiesGoToFirstMax) {
  // 2x2 windows with stride 2 tile the image: the path that writes dx once.
  Tensor x = MakeTensor<double>({1, 1, 2, 5}, std::vector<double>(10, 3.0));
  Tensor out = MakeTensor<double>({1, 1, 1, 2}, {3, 3});
  Tensor dy = MakeTensor<double>({1, 1, 1, 2}, {1.5, 2.5});
  auto op = MakeOp("pool2d_grad",
                   {{"X", {"x"}}, {"Out", {"out"}}, {"Out@GRAD", {"dy"}}},
                   {{"X@GRAD", {"dx"}}},
                   {{"pooling_type", std::string("max")},
                    {"ksize", std::vector<int32_t>{2, 2}},
                    {"strides", std::vector<int32_t>{2, 2}}});
  auto dx =
      ToVector<double>(RunOp(op, {{"x", x}, {"out", out}, {"dy", dy}})["dx"]);
  EXPECT_EQ(dx, (std::vector<double>{1.5, 0, 2.5, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(Pool2dOp, CompileTimeShapeKeepsUnknownBatch) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{-1, 6, 24, 24});
  InferShapeAtCompileTime(Pool2dOp({0, 0, 0, 0, 2, 2, 2, 2, 0, 0}, "max"),
                          block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "y")), Shape({-1, 6, 12, 12}));
}

using testing::ErrorOf;

TEST(Pool2dOp, BadShapesAndAttrsNameTheVar) {
  PoolCase k{1, 1, 4, 4, 2, 2, 2, 2, 0, 0};
  std::string msg =
      ErrorOf(Pool2dOp(k, "max", true, "feature_map"),
              {{"feature_map", RandomTensor<double>({4, 4}, -1, 1, 1)}});
  ASSERT_FALSE(msg.empty()) << "expected an error";
  EXPECT_NE(msg.find("pool2d"), std::string::npos) << msg;
  EXPECT_NE(msg.find("feature_map"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4, 4]"), std::string::npos) << msg;

  PoolCase small{1, 1, 2, 2, 3, 3, 1, 1, 0, 0};
  msg = ErrorOf(Pool2dOp(small, "max", true, "tiny"),
                {{"tiny", RandomTensor<double>({1, 1, 2, 2}, -1, 1, 1)}});
  EXPECT_NE(msg.find("tiny"), std::string::npos) << msg;

  PoolCase pad{1, 1, 4, 4, 2, 2, 1, 1, 2, 0};
  msg = ErrorOf(Pool2dOp(pad, "max"),
                {{"x", RandomTensor<double>({1, 1, 4, 4}, -1, 1, 1)}});
  EXPECT_NE(msg.find("paddings"), std::string::npos) << msg;

  msg = ErrorOf(Pool2dOp(k, "median"),
                {{"x", RandomTensor<double>({1, 1, 4, 4}, -1, 1, 1)}});
  EXPECT_NE(msg.find("median"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
