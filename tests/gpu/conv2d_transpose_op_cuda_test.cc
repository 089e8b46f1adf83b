// The CUDA kernels of conv2d_transpose (cuBLAS GEMMs, col2im and im2col)
// against its CPU kernels: forward and both gradients over strides,
// paddings, dilations, groups, output_size and batches split into
// workspace chunks, in float32 and float64; and gradients that are the
// same bits run after run. Every test skips, saying why, without a CUDA
// build or a visible device.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/image_op_cases.h"

namespace fluid {
namespace {

using testing::CudaCheckOptions;
using testing::CudaMatchesCpu;
using testing::RandomTensor;
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;
using testing::TransposeCase;
using testing::TransposeOp;

template <typename T>
void CheckTranspose(const TransposeCase& k, uint64_t seed,
                    double tolerance = -1) {
  SCOPED_TRACE(Describe(k));
  CudaCheckOptions options;
  options.tolerance = tolerance;
  EXPECT_TRUE(
      CudaMatchesCpu(TransposeOp(k),
                     {{"x", RandomTensor<T>(k.InputShape(), -1, 1, seed)},
                      {"w", RandomTensor<T>(k.FilterShape(), -1, 1, seed + 1)}},
                     options));
}

// {n, c, h, w, m, kh, kw, sh, sw, ph, pw, dh, dw, groups, extra_h, extra_w}
const std::vector<TransposeCase>& Cases() {
  static const std::vector<TransposeCase> cases = {
      {2, 3, 4, 4, 2, 3, 3, 1, 1, 0, 0},
      {2, 3, 5, 4, 4, 4, 4, 2, 2, 1, 1},
      {1, 2, 4, 5, 3, 3, 3, 2, 2, 1, 1, 2, 2},
      {3, 2, 4, 3, 2, 3, 2, 2, 1, 1, 0, 1, 2},
      {3, 5, 4, 6, 2, 1, 1, 1, 1, 0, 0},                 // pointwise, batch
      {1, 5, 4, 6, 3, 1, 1, 1, 1, 0, 0},                 // pointwise, one image
      {2, 4, 4, 4, 3, 1, 1, 2, 2, 0, 0},                 // 1x1 strided
      {2, 4, 4, 3, 6, 3, 3, 2, 1, 1, 0, 1, 1, 2},        // groups
      {2, 4, 3, 3, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4},        // depthwise
      {2, 2, 4, 5, 3, 3, 3, 2, 3, 1, 1, 1, 1, 1, 1, 2},  // output_size
      {1, 4, 3, 3, 2, 3, 2, 3, 2, 0, 0, 2, 1, 2, 2, 1},  // all at once
  };
  return cases;
}

TEST(Conv2dTransposeOpCuda, Float) {
  REQUIRE_GPU();
  uint64_t seed = 500;
  for (const TransposeCase& k : Cases()) CheckTranspose<float>(k, seed += 2);
}

TEST(Conv2dTransposeOpCuda, Double) {
  REQUIRE_GPU();
  uint64_t seed = 600;
  for (const TransposeCase& k : Cases()) CheckTranspose<double>(k, seed += 2);
}

// A batch whose matrices do not fit one workspace chunk: several chunks,
// dW summed chunk by chunk in order. Float64, with the tolerance of
// conv2d's same test (sums of many products in another order).
TEST(Conv2dTransposeOpCuda, SeveralChunksDouble) {
  REQUIRE_GPU();
  CheckTranspose<double>({18, 4, 32, 32, 128, 4, 4, 2, 2, 1, 1}, 700, 1e-10);
}

// Runs are the same bits every time: no atomics in any reduction.
TEST(Conv2dTransposeOpCuda, ResultsAreBitwiseReproducible) {
  REQUIRE_GPU();
  const Place gpu = Place::CUDA(0);
  TransposeCase k{4, 6, 6, 6, 8, 4, 4, 2, 2, 1, 1};
  Tensor x = RandomTensor<float>(k.InputShape(), -1, 1, 1);
  Tensor w = RandomTensor<float>(k.FilterShape(), -1, 1, 2);
  Tensor dy = RandomTensor<float>(k.OutputShape(), -1, 1, 3);
  auto grad = MakeOp(
      "conv2d_transpose_grad",
      {{"Input", {"x"}}, {"Filter", {"w"}}, {GradVarName("Output"), {"dy"}}},
      {{GradVarName("Input"), {"dx"}}, {GradVarName("Filter"), {"dw"}}},
      {{"strides", std::vector<int32_t>{2, 2}},
       {"paddings", std::vector<int32_t>{1, 1}}});
  TensorMap first = RunOp(grad, {{"x", x}, {"w", w}, {"dy", dy}}, 1, gpu);
  for (int run = 0; run < 3; ++run) {
    TensorMap again = RunOp(grad, {{"x", x}, {"w", w}, {"dy", dy}}, 1, gpu);
    EXPECT_EQ(ToVector<float>(again["dx"]), ToVector<float>(first["dx"]));
    EXPECT_EQ(ToVector<float>(again["dw"]), ToVector<float>(first["dw"]));
  }
}

}  // namespace
}  // namespace fluid
