// The CUDA kernels of the dense ops (mul, matmul, softmax, cross_entropy,
// softmax_with_cross_entropy, conv2d, pool2d) against their CPU kernels:
// forward outputs and every generated gradient, in float32 and float64,
// over the attr variants each op supports. Every test skips, saying why,
// without a CUDA build or device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/gpu/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaCheckOptions;
using testing::CudaMatchesCpu;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;

// A random tensor of dtype T.
template <typename T>
Tensor Random(const Shape& shape, double lo, double hi, uint64_t seed) {
  return RandomTensor<T>(shape, lo, hi, seed);
}

// Values drawn from {0, 1, ..., levels - 1}: windows full of ties.
template <typename T>
Tensor FewLevels(const Shape& shape, int levels, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor t;
  T* p = t.mutable_data<T>(shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = static_cast<T>(static_cast<int>(rng() % levels));
  return t;
}

Tensor Labels(const Shape& shape, const std::vector<int64_t>& v) {
  return MakeTensor<int64_t>(shape, v);
}

// Labels (i * 7 + 2) % classes, with every `every`-th row (if > 0) set to
// `ignore`.
std::vector<int64_t> SomeLabels(int64_t rows, int64_t classes, int every = 0,
                                int64_t ignore = -100) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < rows; ++i)
    v.push_back(every > 0 && i % every == 1 ? ignore : (i * 7 + 2) % classes);
  return v;
}

// ---------------------------------------------------------------- mul

proto::OpDesc Mul(int xn, int yn) {
  return MakeOp("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}},
                {{"x_num_col_dims", xn}, {"y_num_col_dims", yn}});
}

template <typename T>
void CheckMul() {
  struct Case {
    Shape x, y;
    int xn, yn;
  };
  const std::vector<Case> cases = {
      {{1, 1}, {1, 1}, 1, 1},          {{3, 5}, {5, 7}, 1, 1},
      {{17, 33}, {33, 9}, 1, 1},       {{2, 3, 4}, {12, 5}, 1, 1},
      {{2, 3, 4}, {4, 5}, 2, 1},       {{6, 2, 2}, {2, 2, 3}, 1, 2},
      {{2, 3, 2, 2}, {2, 2, 5}, 2, 2}, {{64, 10}, {10, 1}, 1, 1}};
  uint64_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << c.x << " x " << c.y << " at " << c.xn << ", " << c.yn);
    EXPECT_TRUE(CudaMatchesCpu(Mul(c.xn, c.yn),
                               {{"x", Random<T>(c.x, -1, 1, seed++)},
                                {"y", Random<T>(c.y, -1, 1, seed++)}}));
  }
}

TEST(DenseOpsCuda, MulFloat) {
  REQUIRE_GPU();
  CheckMul<float>();
}

TEST(DenseOpsCuda, MulDouble) {
  REQUIRE_GPU();
  CheckMul<double>();
}

// ---------------------------------------------------------------- matmul

proto::OpDesc MatMul(bool tx, bool ty, float alpha) {
  return MakeOp("matmul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}},
                {{"transpose_X", tx}, {"transpose_Y", ty}, {"alpha", alpha}});
}

// The stored shape of an [m, k] operand (or [b, m, k]; b = 0: rank 2),
// [.., k, m] when transposed.
Shape Stored(int64_t b, int64_t rows, int64_t cols, bool trans) {
  Shape s;
  if (b > 0) s.push_back(b);
  s.push_back(trans ? cols : rows);
  s.push_back(trans ? rows : cols);
  return s;
}

template <typename T>
void CheckMatMul() {
  struct Case {
    int64_t xb, yb, m, k, n;  // xb/yb: batch of X/Y, 0 for a plain matrix
  };
  const std::vector<Case> cases = {
      {0, 0, 1, 1, 1},
      {0, 0, 3, 5, 7},
      {0, 0, 17, 33, 9},
      {0, 0, 6, 1, 4},
      {2, 2, 3, 4, 5},
      {3, 3, 1, 2, 1},
      {1, 1, 4, 3, 2},
      {5, 5, 2, 7, 3},
      // One operand shared by the batch: its gradient sums over the batch.
      {2, 0, 3, 4, 2},
      {0, 2, 3, 4, 2},
      {7, 0, 5, 3, 6},
      {0, 6, 4, 9, 5},
      {1, 0, 3, 3, 3},
      {0, 1, 2, 5, 4}};
  uint64_t seed = 100;
  for (const Case& c : cases) {
    for (int t = 0; t < 4; ++t) {
      const bool tx = t & 1, ty = t & 2;
      for (float alpha : {1.0f, -0.5f}) {
        Tensor x = Random<T>(Stored(c.xb, c.m, c.k, tx), -1, 1, seed++);
        Tensor y = Random<T>(Stored(c.yb, c.k, c.n, ty), -1, 1, seed++);
        SCOPED_TRACE(::testing::Message()
                     << x.shape() << " x " << y.shape() << " tx=" << tx
                     << " ty=" << ty << " alpha=" << alpha);
        EXPECT_TRUE(
            CudaMatchesCpu(MatMul(tx, ty, alpha), {{"x", x}, {"y", y}}));
      }
    }
  }
}

TEST(DenseOpsCuda, MatMulFloat) {
  REQUIRE_GPU();
  CheckMatMul<float>();
}

TEST(DenseOpsCuda, MatMulDouble) {
  REQUIRE_GPU();
  CheckMatMul<double>();
}

// ---------------------------------------------------------------- softmax

template <typename T>
void CheckSoftmax() {
  const std::vector<Shape> shapes = {{1, 1},   {3, 7},    {2, 3, 5},
                                     {5, 33},  {4, 1000}, {2, 257},
                                     {64, 10}, {7},       {70000, 3}};
  uint64_t seed = 200;
  for (const Shape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << s);
    auto op = MakeOp("softmax", {{"X", {"x"}}}, {{"Out", {"out"}}});
    EXPECT_TRUE(CudaMatchesCpu(op, {{"x", Random<T>(s, -3, 3, seed++)}}));
  }
  // Large logits: the row max is subtracted before exp.
  auto op = MakeOp("softmax", {{"X", {"x"}}}, {{"Out", {"out"}}});
  EXPECT_TRUE(CudaMatchesCpu(op, {{"x", Random<T>({6, 40}, -80, 80, 7)}}));
}

TEST(DenseOpsCuda, SoftmaxFloat) {
  REQUIRE_GPU();
  CheckSoftmax<float>();
}

TEST(DenseOpsCuda, SoftmaxDouble) {
  REQUIRE_GPU();
  CheckSoftmax<double>();
}

// ----------------------------------------------------------------
// cross_entropy

proto::OpDesc CrossEntropy(int ignore_index) {
  return MakeOp("cross_entropy", {{"X", {"x"}}, {"Label", {"label"}}},
                {{"Y", {"y"}}}, {{"ignore_index", ignore_index}});
}

template <typename T>
void CheckCrossEntropy() {
  struct Case {
    Shape x;
    int every;  // every-th row ignored (0: none)
    int ignore_index;
  };
  const std::vector<Case> cases = {
      {{1, 1}, 0, -100},   {{1, 10}, 0, -100}, {{5, 7}, 3, -100},
      {{64, 10}, 4, -100}, {{3, 1001}, 2, -1}, {{2, 3, 5}, 2, -100},
      {{6, 4}, 0, 0},  // class 0 is the ignored one
  };
  uint64_t seed = 300;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << c.x << " ignore_index " << c.ignore_index);
    const int rank = c.x.rank();
    const int64_t rows = c.x.Product(0, rank - 1);
    const int64_t classes = c.x[rank - 1];
    Shape ls = c.x;
    ls[rank - 1] = 1;
    // Probabilities away from 0, as a softmax gives.
    Tensor x = Random<T>(c.x, 0.05, 1, seed++);
    Tensor label =
        Labels(ls, SomeLabels(rows, classes, c.every, c.ignore_index));
    EXPECT_TRUE(CudaMatchesCpu(CrossEntropy(c.ignore_index),
                               {{"x", x}, {"label", label}}));
  }
}

TEST(DenseOpsCuda, CrossEntropyFloat) {
  REQUIRE_GPU();
  CheckCrossEntropy<float>();
}

TEST(DenseOpsCuda, CrossEntropyDouble) {
  REQUIRE_GPU();
  CheckCrossEntropy<double>();
}

// ---------------------------------------------- softmax_with_cross_entropy

proto::OpDesc SoftmaxCe(int ignore_index) {
  return MakeOp("softmax_with_cross_entropy",
                {{"Logits", {"logits"}}, {"Label", {"label"}}},
                {{"Softmax", {"softmax"}}, {"Loss", {"loss"}}},
                {{"ignore_index", ignore_index}});
}

template <typename T>
void CheckSoftmaxCe() {
  struct Case {
    Shape x;
    int every;
    int ignore_index;
    double range;  // logits in [-range, range]
  };
  const std::vector<Case> cases = {
      {{1, 1}, 0, -100, 3},    {{1, 10}, 0, -100, 3},  {{3, 7}, 0, -100, 3},
      {{5, 2}, 2, -100, 3},    {{64, 10}, 4, -100, 3}, {{3, 1001}, 2, -1, 3},
      {{2, 3, 5}, 2, -100, 3}, {{6, 4}, 0, 0, 3},      {{8, 40}, 3, -100, 60},
      {{70000, 3}, 5, -100, 3}};
  uint64_t seed = 400;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << c.x << " ignore_index " << c.ignore_index << " range "
                 << c.range);
    const int rank = c.x.rank();
    const int64_t rows = c.x.Product(0, rank - 1);
    const int64_t classes = c.x[rank - 1];
    Shape ls = c.x;
    ls[rank - 1] = 1;
    Tensor logits = Random<T>(c.x, -c.range, c.range, seed++);
    Tensor label =
        Labels(ls, SomeLabels(rows, classes, c.every, c.ignore_index));
    EXPECT_TRUE(CudaMatchesCpu(SoftmaxCe(c.ignore_index),
                               {{"logits", logits}, {"label", label}}));
  }
}

TEST(DenseOpsCuda, SoftmaxWithCrossEntropyFloat) {
  REQUIRE_GPU();
  CheckSoftmaxCe<float>();
}

TEST(DenseOpsCuda, SoftmaxWithCrossEntropyDouble) {
  REQUIRE_GPU();
  CheckSoftmaxCe<double>();
}

// The CPU kernels reject a label outside [0, C); the CUDA kernels cannot
// see the labels on the host and skip such a row instead: loss 0, gradient
// 0, no read outside the row.
TEST(DenseOpsCuda, OutOfRangeLabelsAreSkipped) {
  REQUIRE_GPU();
  const Place gpu = Place::CUDA(0);
  Tensor label = Labels({4, 1}, {1, 5, -3, 2});
  Tensor x = Random<double>({4, 5}, 0.05, 1, 9);
  Tensor y =
      RunOp(CrossEntropy(-100), {{"x", x}, {"label", label}}, 1, gpu)["y"];
  auto yv = ToVector<double>(y);
  auto xv = ToVector<double>(x);
  EXPECT_DOUBLE_EQ(yv[0], -std::log(xv[0 * 5 + 1]));
  EXPECT_EQ(yv[1], 0.0);
  EXPECT_EQ(yv[2], 0.0);
  EXPECT_DOUBLE_EQ(yv[3], -std::log(xv[3 * 5 + 2]));

  Tensor dy = Random<double>({4, 1}, -1, 1, 10);
  auto ce_grad =
      MakeOp("cross_entropy_grad",
             {{"X", {"x"}}, {"Label", {"label"}}, {GradVarName("Y"), {"dy"}}},
             {{GradVarName("X"), {"dx"}}});
  auto dx = ToVector<double>(
      RunOp(ce_grad, {{"x", x}, {"label", label}, {"dy", dy}}, 1, gpu)["dx"]);
  for (int j = 0; j < 5; ++j) {
    EXPECT_EQ(dx[1 * 5 + j], 0.0) << j;
    EXPECT_EQ(dx[2 * 5 + j], 0.0) << j;
  }

  TensorMap out =
      RunOp(SoftmaxCe(-100), {{"logits", x}, {"label", label}}, 1, gpu);
  auto loss = ToVector<double>(out["loss"]);
  EXPECT_EQ(loss[1], 0.0);
  EXPECT_EQ(loss[2], 0.0);
  // The softmax of a skipped row is still computed.
  auto sm = ToVector<double>(out["softmax"]);
  double sum = 0;
  for (int j = 0; j < 5; ++j) sum += sm[1 * 5 + j];
  EXPECT_NEAR(sum, 1.0, 1e-12);

  auto sce_grad = MakeOp("softmax_with_cross_entropy_grad",
                         {{"Softmax", {"softmax"}},
                          {"Label", {"label"}},
                          {GradVarName("Loss"), {"dloss"}}},
                         {{GradVarName("Logits"), {"dlogits"}}});
  auto dl = ToVector<double>(RunOp(
      sce_grad, {{"softmax", out["softmax"]}, {"label", label}, {"dloss", dy}},
      1, gpu)["dlogits"]);
  for (int j = 0; j < 5; ++j) {
    EXPECT_EQ(dl[1 * 5 + j], 0.0) << j;
    EXPECT_EQ(dl[2 * 5 + j], 0.0) << j;
  }
}

// ---------------------------------------------------------------- conv2d

struct ConvCase {
  int n, c, h, w, m, kh, kw;
  int stride_h, stride_w, pad_h, pad_w, dil_h = 1, dil_w = 1;
};

std::string Describe(const ConvCase& k) {
  std::ostringstream os;
  os << "N" << k.n << " C" << k.c << " " << k.h << "x" << k.w << " M" << k.m
     << " k" << k.kh << "x" << k.kw << " s" << k.stride_h << "," << k.stride_w
     << " p" << k.pad_h << "," << k.pad_w << " d" << k.dil_h << "," << k.dil_w;
  return os.str();
}

proto::OpDesc Conv(const ConvCase& k) {
  return MakeOp("conv2d", {{"Input", {"x"}}, {"Filter", {"w"}}},
                {{"Output", {"y"}}},
                {{"strides", std::vector<int32_t>{k.stride_h, k.stride_w}},
                 {"paddings", std::vector<int32_t>{k.pad_h, k.pad_w}},
                 {"dilations", std::vector<int32_t>{k.dil_h, k.dil_w}},
                 {"groups", 1}});
}

template <typename T>
void CheckConv(const ConvCase& k, uint64_t seed, double tolerance = -1) {
  SCOPED_TRACE(Describe(k));
  Tensor x = Random<T>({k.n, k.c, k.h, k.w}, -1, 1, seed);
  Tensor w = Random<T>({k.m, k.c, k.kh, k.kw}, -1, 1, seed + 1);
  CudaCheckOptions options;
  options.tolerance = tolerance;
  EXPECT_TRUE(CudaMatchesCpu(Conv(k), {{"x", x}, {"w", w}}, options));
}

const std::vector<ConvCase>& ConvCases() {
  static const std::vector<ConvCase> cases = {
      {2, 3, 7, 7, 4, 3, 3, 1, 1, 0, 0},
      {2, 3, 8, 8, 4, 3, 3, 2, 2, 1, 1},
      {1, 2, 9, 9, 3, 3, 3, 1, 1, 2, 2, 2, 2},
      {3, 2, 9, 6, 2, 3, 2, 2, 1, 1, 0, 1, 2},
      {2, 1, 5, 5, 1, 5, 5, 1, 1, 2, 2},  // window as large as the image
      {2, 2, 3, 3, 2, 5, 5, 1, 1, 2, 2},  // larger than the image, padded
      {3, 5, 4, 6, 2, 1, 1, 1, 1, 0, 0},  // pointwise, batch
      {1, 5, 4, 6, 3, 1, 1, 1, 1, 0, 0},  // pointwise, one image
      {2, 4, 7, 7, 3, 1, 1, 2, 2, 0, 0},  // 1x1 with stride: not pointwise
      {2, 3, 6, 6, 2, 1, 1, 1, 1, 1, 1},  // 1x1 with padding
      {1, 3, 10, 12, 4, 3, 5, 3, 2, 2, 1, 1, 1},
      {4, 6, 12, 12, 8, 5, 5, 1, 1, 2, 2},  // LeNet-like
  };
  return cases;
}

TEST(DenseOpsCuda, Conv2dFloat) {
  REQUIRE_GPU();
  uint64_t seed = 500;
  for (const ConvCase& k : ConvCases()) CheckConv<float>(k, seed += 2);
}

TEST(DenseOpsCuda, Conv2dDouble) {
  REQUIRE_GPU();
  uint64_t seed = 600;
  for (const ConvCase& k : ConvCases()) CheckConv<double>(k, seed += 2);
  // LeNet's first layer. Float64 only: its dW sums 2880 products per entry,
  // where float32 CPU and GPU sums part at about 1e-5.
  CheckConv<double>({5, 1, 28, 28, 6, 5, 5, 1, 1, 0, 0}, 650);
}

// A batch whose column matrices do not fit one workspace chunk: the images
// go in several chunks and dW adds the chunks' products in order. Float64
// only: dW sums 262,144 products per entry, more than float32 keeps to 1e-5.
// Summed in another order (cuBLAS's blocking, chunk by chunk, against
// Eigen's), such sums part by up to about n * eps = 3e-11 relative, so this
// case is held to 1e-10 rather than the 1e-12 of the small cases.
TEST(DenseOpsCuda, Conv2dSeveralChunksDouble) {
  REQUIRE_GPU();
  CheckConv<double>({16, 16, 128, 128, 8, 3, 3, 1, 1, 1, 1}, 700, 1e-10);
}

// ---------------------------------------------------------------- pool2d

struct PoolCase {
  int n, c, h, w, kh, kw, stride_h, stride_w, pad_h, pad_w;
};

proto::OpDesc Pool(const PoolCase& k, const std::string& type, bool exclusive,
                   bool global = false) {
  return MakeOp("pool2d", {{"X", {"x"}}}, {{"Out", {"y"}}},
                {{"pooling_type", type},
                 {"ksize", std::vector<int32_t>{k.kh, k.kw}},
                 {"strides", std::vector<int32_t>{k.stride_h, k.stride_w}},
                 {"paddings", std::vector<int32_t>{k.pad_h, k.pad_w}},
                 {"exclusive", exclusive},
                 {"global_pooling", global}});
}

const std::vector<PoolCase>& PoolCases() {
  static const std::vector<PoolCase> cases = {
      {2, 3, 8, 8, 2, 2, 2, 2, 0, 0},     // tiles the plane (LeNet)
      {2, 3, 9, 7, 2, 2, 2, 2, 0, 0},     // tiles, with a ragged edge
      {2, 2, 7, 7, 3, 3, 2, 2, 1, 1},     // overlapping, padded
      {1, 3, 6, 6, 3, 3, 1, 1, 1, 1},     // stride 1, padded
      {2, 2, 9, 8, 2, 3, 1, 2, 1, 0},     // rectangular
      {1, 2, 10, 10, 2, 2, 3, 3, 0, 0},   // gaps between windows
      {2, 1, 5, 5, 5, 5, 1, 1, 0, 0},     // one window, the whole plane
      {1, 2, 11, 13, 4, 3, 3, 2, 2, 1},   // odd everything
      {3, 4, 14, 14, 3, 3, 2, 2, 0, 0}};  // larger
  return cases;
}

template <typename T>
void CheckPool() {
  uint64_t seed = 800;
  for (const PoolCase& k : PoolCases()) {
    for (const std::string type : {"max", "avg"}) {
      for (bool exclusive : {true, false}) {
        SCOPED_TRACE(::testing::Message()
                     << "N" << k.n << " C" << k.c << " " << k.h << "x" << k.w
                     << " k" << k.kh << "x" << k.kw << " s" << k.stride_h << ","
                     << k.stride_w << " p" << k.pad_h << "," << k.pad_w << " "
                     << type << " exclusive " << exclusive);
        Tensor x = Random<T>({k.n, k.c, k.h, k.w}, -1, 1, seed++);
        EXPECT_TRUE(CudaMatchesCpu(Pool(k, type, exclusive), {{"x", x}}));
        // Ties: the max and its gradient take the first maximum in
        // row-major order, on both.
        Tensor ties = FewLevels<T>({k.n, k.c, k.h, k.w}, 3, seed++);
        EXPECT_TRUE(CudaMatchesCpu(Pool(k, type, exclusive), {{"x", ties}}));
      }
    }
  }
  // Global pooling ignores ksize, strides and paddings.
  for (const std::string type : {"max", "avg"}) {
    SCOPED_TRACE("global " + type);
    PoolCase k{2, 3, 5, 4, 1, 1, 1, 1, 0, 0};
    Tensor x = Random<T>({k.n, k.c, k.h, k.w}, -1, 1, seed++);
    EXPECT_TRUE(CudaMatchesCpu(Pool(k, type, true, true), {{"x", x}}));
    Tensor ties = FewLevels<T>({k.n, k.c, k.h, k.w}, 2, seed++);
    EXPECT_TRUE(CudaMatchesCpu(Pool(k, type, false, true), {{"x", ties}}));
  }
}

TEST(DenseOpsCuda, Pool2dFloat) {
  REQUIRE_GPU();
  CheckPool<float>();
}

TEST(DenseOpsCuda, Pool2dDouble) {
  REQUIRE_GPU();
  CheckPool<double>();
}

// Every pixel of a constant plane ties: all of a window's gradient goes to
// its top-left pixel.
TEST(DenseOpsCuda, MaxPoolGradientOfConstantPlaneGoesTopLeft) {
  REQUIRE_GPU();
  PoolCase k{1, 1, 4, 4, 2, 2, 2, 2, 0, 0};
  Tensor x = MakeTensor<double>({1, 1, 4, 4}, std::vector<double>(16, 1.0));
  Tensor dy = MakeTensor<double>({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor y = RunOp(Pool(k, "max", true), {{"x", x}}, 1, Place::CUDA(0))["y"];
  auto grad =
      MakeOp("pool2d_grad",
             {{"X", {"x"}}, {"Out", {"y"}}, {GradVarName("Out"), {"dy"}}},
             {{GradVarName("X"), {"dx"}}},
             {{"pooling_type", std::string("max")},
              {"ksize", std::vector<int32_t>{2, 2}},
              {"strides", std::vector<int32_t>{2, 2}},
              {"paddings", std::vector<int32_t>{0, 0}}});
  auto dx = ToVector<double>(
      RunOp(grad, {{"x", x}, {"y", y}, {"dy", dy}}, 1, Place::CUDA(0))["dx"]);
  std::vector<double> want = {1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0};
  EXPECT_EQ(dx, want);
}

// Runs are the same bits every time: no atomics in any reduction.
TEST(DenseOpsCuda, ResultsAreBitwiseReproducible) {
  REQUIRE_GPU();
  const Place gpu = Place::CUDA(0);
  Tensor x = Random<float>({4, 6, 12, 12}, -1, 1, 1);
  Tensor w = Random<float>({8, 6, 5, 5}, -1, 1, 2);
  Tensor dy = Random<float>({4, 8, 12, 12}, -1, 1, 3);
  auto grad = MakeOp(
      "conv2d_grad",
      {{"Input", {"x"}}, {"Filter", {"w"}}, {GradVarName("Output"), {"dy"}}},
      {{GradVarName("Input"), {"dx"}}, {GradVarName("Filter"), {"dw"}}},
      {{"strides", std::vector<int32_t>{1, 1}},
       {"paddings", std::vector<int32_t>{2, 2}},
       {"dilations", std::vector<int32_t>{1, 1}}});
  TensorMap first = RunOp(grad, {{"x", x}, {"w", w}, {"dy", dy}}, 1, gpu);
  Tensor logits = Random<float>({300, 500}, -5, 5, 4);
  Tensor label = Labels({300, 1}, SomeLabels(300, 500));
  TensorMap sfirst =
      RunOp(SoftmaxCe(-100), {{"logits", logits}, {"label", label}}, 1, gpu);
  for (int run = 0; run < 3; ++run) {
    TensorMap again = RunOp(grad, {{"x", x}, {"w", w}, {"dy", dy}}, 1, gpu);
    EXPECT_EQ(ToVector<float>(again["dx"]), ToVector<float>(first["dx"]));
    EXPECT_EQ(ToVector<float>(again["dw"]), ToVector<float>(first["dw"]));
    TensorMap sagain =
        RunOp(SoftmaxCe(-100), {{"logits", logits}, {"label", label}}, 1, gpu);
    EXPECT_EQ(ToVector<float>(sagain["softmax"]),
              ToVector<float>(sfirst["softmax"]));
    EXPECT_EQ(ToVector<float>(sagain["loss"]), ToVector<float>(sfirst["loss"]));
  }
}

}  // namespace
}  // namespace fluid
