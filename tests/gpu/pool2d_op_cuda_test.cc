// The CUDA kernels of pool2d against its CPU kernels: max and average,
// exclusive or not, global, windows that tile, overlap, leave gaps or pass
// the edge, with ties; forward and gradient, float32 and float64. Every
// test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/cuda_op_check.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::MakeTensor;
using testing::Pool2dOp;
using testing::PoolCase;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

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
        SCOPED_TRACE(::testing::Message() << Describe(k) << " " << type
                                          << " exclusive " << exclusive);
        Tensor x = RandomTensor<T>({k.n, k.c, k.h, k.w}, -1, 1, seed++);
        EXPECT_TRUE(CudaMatchesCpu(Pool2dOp(k, type, exclusive), {{"x", x}}));
        // Ties: the max and its gradient take the first maximum in
        // row-major order, on both.
        Tensor ties = FewLevels<T>({k.n, k.c, k.h, k.w}, 3, seed++);
        EXPECT_TRUE(
            CudaMatchesCpu(Pool2dOp(k, type, exclusive), {{"x", ties}}));
      }
    }
  }
  // ceil_mode: a last, partial window along each axis.
  for (const PoolCase& k : {PoolCase{2, 3, 9, 7, 2, 2, 2, 2, 0, 0},
                            PoolCase{1, 2, 8, 7, 3, 3, 2, 2, 1, 1}}) {
    for (const std::string type : {"max", "avg"}) {
      for (bool exclusive : {true, false}) {
        SCOPED_TRACE(::testing::Message() << Describe(k) << " ceil " << type
                                          << " exclusive " << exclusive);
        proto::OpDesc op = Pool2dOp(k, type, exclusive);
        SetOpAttr(&op, "ceil_mode", true);
        Tensor x = RandomTensor<T>({k.n, k.c, k.h, k.w}, -1, 1, seed++);
        EXPECT_TRUE(CudaMatchesCpu(op, {{"x", x}}));
      }
    }
  }
  // Global pooling ignores ksize, strides and paddings.
  for (const std::string type : {"max", "avg"}) {
    SCOPED_TRACE("global " + type);
    PoolCase k{2, 3, 5, 4, 1, 1, 1, 1, 0, 0};
    Tensor x = RandomTensor<T>({k.n, k.c, k.h, k.w}, -1, 1, seed++);
    EXPECT_TRUE(CudaMatchesCpu(Pool2dOp(k, type, true, "x", true), {{"x", x}}));
    Tensor ties = FewLevels<T>({k.n, k.c, k.h, k.w}, 2, seed++);
    EXPECT_TRUE(
        CudaMatchesCpu(Pool2dOp(k, type, false, "x", true), {{"x", ties}}));
  }
}

TEST(Pool2dOpCuda, Float) {
  REQUIRE_GPU();
  CheckPool<float>();
}

TEST(Pool2dOpCuda, Double) {
  REQUIRE_GPU();
  CheckPool<double>();
}

// Every pixel of a constant plane ties: all of a window's gradient goes to
// its top-left pixel.
TEST(Pool2dOpCuda, MaxGradientOfConstantPlaneGoesTopLeft) {
  REQUIRE_GPU();
  PoolCase k{1, 1, 4, 4, 2, 2, 2, 2, 0, 0};
  Tensor x = MakeTensor<double>({1, 1, 4, 4}, std::vector<double>(16, 1.0));
  Tensor dy = MakeTensor<double>({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor y = RunOp(Pool2dOp(k, "max"), {{"x", x}}, 1, Place::CUDA(0))["y"];
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

}  // namespace
}  // namespace fluid
