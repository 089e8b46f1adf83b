// The CUDA kernels of mul (cuBLAS GEMM) against its CPU kernels: forward
// and both gradients over the flattening attrs, float32 and float64, and
// bfloat16 and float16 (cublasGemmEx against oneDNN or the float32 path)
// with the tolerances of those types. Every
// test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "src/framework/grad_op_maker.h"
#include "tests/testing/cuda_op_check.h"
#include "tests/testing/half_cuda_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::RandomTensor;
using testing::TensorMap;

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
                               {{"x", RandomTensor<T>(c.x, -1, 1, seed++)},
                                {"y", RandomTensor<T>(c.y, -1, 1, seed++)}}));
  }
}

TEST(MulOpCuda, Float) {
  REQUIRE_GPU();
  CheckMul<float>();
}

TEST(MulOpCuda, Double) {
  REQUIRE_GPU();
  CheckMul<double>();
}

// The 16-bit kernels: each case's values rounded to the type.
void CheckMulHalf(DataType dtype) {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{1, 1}, {1, 1}},
                                                       {{3, 5}, {5, 7}},
                                                       {{17, 33}, {33, 9}},
                                                       {{64, 10}, {10, 1}}};
  uint64_t seed = 200;
  for (const auto& s : shapes) {
    SCOPED_TRACE(::testing::Message()
                 << s.first << " x " << s.second << " " << DataTypeName(dtype));
    EXPECT_TRUE(testing::HalfCudaMatchesCpu(
        Mul(1, 1),
        {{"x", RandomTensor<float>(s.first, -1, 1, seed++)},
         {"y", RandomTensor<float>(s.second, -1, 1, seed++)}},
        dtype));
  }
  EXPECT_TRUE(testing::HalfCudaMatchesCpu(
      Mul(2, 1),
      {{"x", RandomTensor<float>({2, 3, 4}, -1, 1, seed++)},
       {"y", RandomTensor<float>({4, 5}, -1, 1, seed++)}},
      dtype));
}

TEST(MulOpCuda, BFloat16) {
  REQUIRE_GPU();
  CheckMulHalf(DataType::kBFloat16);
}

TEST(MulOpCuda, Float16) {
  REQUIRE_GPU();
  CheckMulHalf(DataType::kFloat16);
}

// mul_grad with YGradIn (the pipeline's accumulation over micro-batches:
// cuBLAS's beta = 1), in place and into another var, every dtype.
proto::OpDesc MulGradAccumulating(const std::string& dy) {
  return MakeOp("mul_grad",
                {{"X", {"x"}},
                 {"Y", {"y"}},
                 {GradSlot("Out"), {"dout"}},
                 {"YGradIn", {"acc"}}},
                {{GradSlot("X"), {"dx"}}, {GradSlot("Y"), {dy}}});
}

template <typename T>
TensorMap AccumulationFeeds() {
  return {{"x", RandomTensor<T>({17, 33}, -1, 1, 301)},
          {"y", RandomTensor<T>({33, 9}, -1, 1, 302)},
          {"dout", RandomTensor<T>({17, 9}, -1, 1, 303)},
          {"acc", RandomTensor<T>({33, 9}, -1, 1, 304)}};
}

TEST(MulOpCuda, GradientAddsYGradIn) {
  REQUIRE_GPU();
  testing::CudaCheckOptions once;
  once.grad = false;
  for (const char* dy : {"acc", "dy"}) {
    SCOPED_TRACE(dy);
    EXPECT_TRUE(CudaMatchesCpu(MulGradAccumulating(dy),
                               AccumulationFeeds<float>(), once));
    EXPECT_TRUE(CudaMatchesCpu(MulGradAccumulating(dy),
                               AccumulationFeeds<double>(), once));
    for (DataType dt : {DataType::kBFloat16, DataType::kFloat16}) {
      SCOPED_TRACE(DataTypeName(dt));
      TensorMap feeds;
      for (const auto& [name, t] : AccumulationFeeds<float>())
        feeds[name] = testing::Converted(t, dt);
      EXPECT_TRUE(CudaMatchesCpu(MulGradAccumulating(dy), feeds, once));
    }
  }
}

}  // namespace
}  // namespace fluid
