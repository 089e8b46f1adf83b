// The CUDA kernels of matmul (cuBLAS GEMM, strided-batched) against its CPU
// kernels: forward and both gradients for every transpose, scaled, plain
// and batched, one operand shared by the batch; float32 and float64, and
// bfloat16 and float16 (cublasGemmEx). Every
// test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/half_cuda_check.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::MatMulCase;
using testing::MatMulOp;
using testing::RandomTensor;
using testing::StoredShape;

template <typename T>
void CheckMatMul() {
  const std::vector<MatMulCase> cases = {
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
  for (const MatMulCase& c : cases) {
    for (int t = 0; t < 4; ++t) {
      const bool tx = t & 1, ty = t & 2;
      for (float alpha : {1.0f, -0.5f}) {
        Tensor x =
            RandomTensor<T>(StoredShape(c.xb, c.m, c.k, tx), -1, 1, seed++);
        Tensor y =
            RandomTensor<T>(StoredShape(c.yb, c.k, c.n, ty), -1, 1, seed++);
        SCOPED_TRACE(::testing::Message()
                     << x.shape() << " x " << y.shape() << " tx=" << tx
                     << " ty=" << ty << " alpha=" << alpha);
        EXPECT_TRUE(
            CudaMatchesCpu(MatMulOp(tx, ty, alpha), {{"x", x}, {"y", y}}));
      }
    }
  }
}

// Rank-4 batches ([B, H, M, K] x [B, H, K, N]) and a rank-2 operand shared
// by a rank-4 batch.
template <typename T>
void CheckMatMulRank4() {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3, 4, 5}, {2, 3, 5, 6}},
      {{2, 3, 4, 5}, {5, 6}},
      {{4, 5}, {2, 3, 5, 6}}};
  uint64_t seed = 900;
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.first << " x " << c.second);
    EXPECT_TRUE(
        CudaMatchesCpu(MatMulOp(false, false, 0.5f),
                       {{"x", RandomTensor<T>(c.first, -1, 1, seed++)},
                        {"y", RandomTensor<T>(c.second, -1, 1, seed++)}}));
  }
}

TEST(MatmulOpCuda, Rank4Float) {
  REQUIRE_GPU();
  CheckMatMulRank4<float>();
}

TEST(MatmulOpCuda, Rank4Double) {
  REQUIRE_GPU();
  CheckMatMulRank4<double>();
}

TEST(MatmulOpCuda, Float) {
  REQUIRE_GPU();
  CheckMatMul<float>();
}

TEST(MatmulOpCuda, Double) {
  REQUIRE_GPU();
  CheckMatMul<double>();
}

// The 16-bit kernels over the transposes, plain, batched and shared
// operands; alpha is applied in float32, not rounded to 16 bits.
void CheckMatMulHalf(DataType dtype) {
  const std::vector<MatMulCase> cases = {{0, 0, 3, 5, 7},
                                         {2, 2, 3, 4, 5},
                                         {2, 0, 3, 4, 2},
                                         {0, 2, 3, 4, 2},
                                         {7, 0, 5, 3, 6}};
  uint64_t seed = 300;
  for (const MatMulCase& c : cases) {
    for (int t = 0; t < 4; ++t) {
      const bool tx = t & 1, ty = t & 2;
      Tensor x =
          RandomTensor<float>(StoredShape(c.xb, c.m, c.k, tx), -1, 1, seed++);
      Tensor y =
          RandomTensor<float>(StoredShape(c.yb, c.k, c.n, ty), -1, 1, seed++);
      SCOPED_TRACE(::testing::Message()
                   << x.shape() << " x " << y.shape() << " tx=" << tx
                   << " ty=" << ty << " " << DataTypeName(dtype));
      EXPECT_TRUE(testing::HalfCudaMatchesCpu(MatMulOp(tx, ty, 0.3f),
                                              {{"x", x}, {"y", y}}, dtype));
    }
  }
}

TEST(MatmulOpCuda, BFloat16) {
  REQUIRE_GPU();
  CheckMatMulHalf(DataType::kBFloat16);
}

TEST(MatmulOpCuda, Float16) {
  REQUIRE_GPU();
  CheckMatMulHalf(DataType::kFloat16);
}

}  // namespace
}  // namespace fluid
