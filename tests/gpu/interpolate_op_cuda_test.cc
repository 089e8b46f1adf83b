// The CUDA kernels of bilinear_interp and nearest_interp against their CPU
// kernels: forward and gradient over up- and down-sampling, every
// align_corners / align_mode, scale, one-pixel planes and OutSize, in
// float32 and float64; and gradients that are the same bits run after
// run. Every test skips, saying why, without a CUDA build or a visible
// device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/image_op_cases.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::InterpCase;
using testing::InterpOp;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

// {n, c, h, w, out_h, out_w, align_corners, align_mode, scale}
const std::vector<InterpCase>& Cases() {
  static const std::vector<InterpCase> cases = {
      {2, 3, 4, 5, 8, 10},
      {1, 2, 6, 7, 3, 4},
      {2, 2, 4, 5, 7, 3, false, 1},
      {2, 2, 4, 5, 7, 3, false, 0},
      {1, 3, 5, 3, 12, 9, false, 0},
      {1, 2, 9, 8, 4, 3, false, 0},
      {2, 1, 1, 4, 3, 1, true, 1},
      {2, 2, 3, 4, 0, 0, true, 1, 2.5f},
      {3, 4, 16, 16, 31, 33, false, 0},
  };
  return cases;
}

template <typename T>
void CheckAll(uint64_t seed) {
  for (const std::string type : {"bilinear_interp", "nearest_interp"})
    for (InterpCase c : Cases())
      for (bool corners : {true, false}) {
        c.align_corners = corners;
        SCOPED_TRACE(type + " " + Describe(c));
        EXPECT_TRUE(CudaMatchesCpu(
            InterpOp(type, c),
            {{"x", RandomTensor<T>({c.n, c.c, c.h, c.w}, -1, 1, ++seed)}}));
      }
}

TEST(InterpolateOpCuda, Float) {
  REQUIRE_GPU();
  CheckAll<float>(100);
}

TEST(InterpolateOpCuda, Double) {
  REQUIRE_GPU();
  CheckAll<double>(200);
}

TEST(InterpolateOpCuda, OutSizeTensor) {
  REQUIRE_GPU();
  InterpCase c{2, 3, 5, 4, 2, 2, false, 0};
  for (const std::string type : {"bilinear_interp", "nearest_interp"}) {
    SCOPED_TRACE(type);
    EXPECT_TRUE(
        CudaMatchesCpu(InterpOp(type, c, "size"),
                       {{"x", RandomTensor<float>({2, 3, 5, 4}, -1, 1, 7)},
                        {"size", testing::MakeTensor<int32_t>({2}, {9, 7})}}));
  }
}

TEST(InterpolateOpCuda, GradientIsBitwiseReproducible) {
  REQUIRE_GPU();
  const Place gpu = Place::CUDA(0);
  InterpCase c{2, 4, 12, 12, 29, 31, false, 0};
  Tensor x = RandomTensor<float>({2, 4, 12, 12}, -1, 1, 1);
  Tensor dy = RandomTensor<float>({2, 4, 29, 31}, -1, 1, 2);
  for (const std::string type : {"bilinear_interp", "nearest_interp"}) {
    auto grad = testing::InterpGradOp(type, c);
    auto first =
        ToVector<float>(RunOp(grad, {{"x", x}, {"dy", dy}}, 1, gpu)["dx"]);
    for (int run = 0; run < 3; ++run)
      EXPECT_EQ(
          ToVector<float>(RunOp(grad, {{"x", x}, {"dy", dy}}, 1, gpu)["dx"]),
          first);
  }
}

}  // namespace
}  // namespace fluid
