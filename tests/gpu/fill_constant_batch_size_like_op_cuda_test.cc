// The CUDA kernels of fill_constant_batch_size_like against its CPU
// kernels, every dtype. Every test skips, saying why, without a CUDA build
// or a visible device.
#include <gtest/gtest.h>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaCheckOptions;
using testing::CudaMatchesCpu;
using testing::RandomTensor;

TEST(FillConstantBatchSizeLikeOpCuda, EveryDtype) {
  REQUIRE_GPU();
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64, DataType::kInt32,
                      DataType::kInt64}) {
    SCOPED_TRACE(::testing::Message() << dt);
    auto op = MakeOp("fill_constant_batch_size_like", {{"Input", {"x"}}},
                     {{"Out", {"out"}}},
                     {{"shape", std::vector<int64_t>{-1, 300}},
                      {"value", 3.0f},
                      {"dtype", static_cast<int32_t>(dt)}});
    CudaCheckOptions opt;
    opt.grad = false;
    EXPECT_TRUE(CudaMatchesCpu(
        op, {{"x", RandomTensor<double>({7, 2}, -1, 1, 1)}}, opt));
  }
}

}  // namespace
}  // namespace fluid
