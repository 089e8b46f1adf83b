// The CUDA kernels of conv2d (im2col + cuBLAS GEMM) against its CPU
// kernels: forward and both gradients over strides, paddings, dilations,
// pointwise filters and batches split into workspace chunks; float32 and
// float64, and bfloat16 and float16 (cublasGemmEx). Also gradients that are the
// same bits run after run. Every test skips, saying why, without a CUDA build
// or a visible device.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/half_cuda_check.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::Conv2dOp;
using testing::ConvCase;
using testing::CudaCheckOptions;
using testing::CudaMatchesCpu;
using testing::RandomTensor;
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;

template <typename T>
void CheckConv(const ConvCase& k, uint64_t seed, double tolerance = -1) {
  SCOPED_TRACE(Describe(k));
  Tensor x = RandomTensor<T>({k.n, k.c, k.h, k.w}, -1, 1, seed);
  Tensor w = RandomTensor<T>(testing::FilterShape(k), -1, 1, seed + 1);
  CudaCheckOptions options;
  options.tolerance = tolerance;
  EXPECT_TRUE(CudaMatchesCpu(Conv2dOp(k), {{"x", x}, {"w", w}}, options));
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

TEST(Conv2dOpCuda, Float) {
  REQUIRE_GPU();
  uint64_t seed = 500;
  for (const ConvCase& k : ConvCases()) CheckConv<float>(k, seed += 2);
}

TEST(Conv2dOpCuda, Double) {
  REQUIRE_GPU();
  uint64_t seed = 600;
  for (const ConvCase& k : ConvCases()) CheckConv<double>(k, seed += 2);
  // LeNet's first layer. Float64 only: its dW sums 2880 products per entry,
  // where float32 CPU and GPU sums part at about 1e-5.
  CheckConv<double>({5, 1, 28, 28, 6, 5, 5, 1, 1, 0, 0}, 650);
}

// Grouped convolutions: {n, c, h, w, m, kh, kw, sh, sw, ph, pw, dh, dw,
// groups}, through every path (im2col, pointwise batch, pointwise image).
TEST(Conv2dOpCuda, Grouped) {
  REQUIRE_GPU();
  const std::vector<ConvCase> cases = {
      {2, 4, 6, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2},
      {3, 6, 7, 7, 3, 3, 2, 2, 1, 1, 0, 1, 2, 3},
      {2, 4, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4},  // depthwise
      {2, 4, 5, 6, 8, 1, 1, 1, 1, 0, 0, 1, 1, 2},  // pointwise
      {1, 6, 6, 6, 6, 1, 1, 1, 1, 0, 0, 1, 1, 3},  // pointwise, one image
  };
  uint64_t seed = 800;
  for (const ConvCase& k : cases) {
    CheckConv<float>(k, seed += 2);
    CheckConv<double>(k, seed += 2);
  }
}

// A batch whose column matrices do not fit one workspace chunk: the images
// go in several chunks and dW adds the chunks' products in order. Float64
// only: dW sums 262,144 products per entry, more than float32 keeps to 1e-5.
// Summed in another order (cuBLAS's blocking, chunk by chunk, against
// Eigen's), such sums part by up to about n * eps = 3e-11 relative, so this
// case is held to 1e-10 rather than the 1e-12 of the small cases.
TEST(Conv2dOpCuda, SeveralChunksDouble) {
  REQUIRE_GPU();
  CheckConv<double>({16, 16, 128, 128, 8, 3, 3, 1, 1, 1, 1}, 700, 1e-10);
}

// Runs are the same bits every time: no atomics in any reduction.
TEST(Conv2dOpCuda, ResultsAreBitwiseReproducible) {
  REQUIRE_GPU();
  const Place gpu = Place::CUDA(0);
  Tensor x = RandomTensor<float>({4, 6, 12, 12}, -1, 1, 1);
  Tensor w = RandomTensor<float>({8, 6, 5, 5}, -1, 1, 2);
  Tensor dy = RandomTensor<float>({4, 8, 12, 12}, -1, 1, 3);
  auto grad = MakeOp(
      "conv2d_grad",
      {{"Input", {"x"}}, {"Filter", {"w"}}, {GradVarName("Output"), {"dy"}}},
      {{GradVarName("Input"), {"dx"}}, {GradVarName("Filter"), {"dw"}}},
      {{"strides", std::vector<int32_t>{1, 1}},
       {"paddings", std::vector<int32_t>{2, 2}},
       {"dilations", std::vector<int32_t>{1, 1}}});
  TensorMap first = RunOp(grad, {{"x", x}, {"w", w}, {"dy", dy}}, 1, gpu);
  for (int run = 0; run < 3; ++run) {
    TensorMap again = RunOp(grad, {{"x", x}, {"w", w}, {"dy", dy}}, 1, gpu);
    EXPECT_EQ(ToVector<float>(again["dx"]), ToVector<float>(first["dx"]));
    EXPECT_EQ(ToVector<float>(again["dw"]), ToVector<float>(first["dw"]));
  }
}

// The 16-bit kernels over the cases above and grouped ones.
void CheckConvHalf(DataType dtype) {
  std::vector<ConvCase> cases = ConvCases();
  cases.push_back({2, 4, 6, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2});
  cases.push_back({2, 4, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4});
  cases.push_back({2, 4, 5, 6, 8, 1, 1, 1, 1, 0, 0, 1, 1, 2});
  uint64_t seed = 900;
  for (const ConvCase& k : cases) {
    SCOPED_TRACE(Describe(k) + " " + DataTypeName(dtype));
    Tensor x = RandomTensor<float>({k.n, k.c, k.h, k.w}, -1, 1, seed++);
    Tensor w = RandomTensor<float>(testing::FilterShape(k), -1, 1, seed++);
    EXPECT_TRUE(
        testing::HalfCudaMatchesCpu(Conv2dOp(k), {{"x", x}, {"w", w}}, dtype));
  }
}

TEST(Conv2dOpCuda, BFloat16) {
  REQUIRE_GPU();
  CheckConvHalf(DataType::kBFloat16);
}

TEST(Conv2dOpCuda, Float16) {
  REQUIRE_GPU();
  CheckConvHalf(DataType::kFloat16);
}

}  // namespace
}  // namespace fluid
