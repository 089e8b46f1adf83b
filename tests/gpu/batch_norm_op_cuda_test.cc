// The CUDA kernels of batch_norm against its CPU kernels: batch and running
// statistics, [N, C] and NCHW, float32 and float64, forward and gradient.
// Every test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaCheckOptions;
using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

proto::OpDesc BatchNorm(const AttributeMap& attrs) {
  return MakeOp("batch_norm",
                {{"X", {"x"}},
                 {"Scale", {"scale"}},
                 {"Bias", {"bias"}},
                 {"Mean", {"mean"}},
                 {"Variance", {"var"}}},
                {{"Y", {"y"}},
                 {"MeanOut", {"mean"}},
                 {"VarianceOut", {"var"}},
                 {"SavedMean", {"saved_mean"}},
                 {"SavedVariance", {"saved_var"}}},
                attrs);
}

TEST(BatchNormOpCuda, MatchesCpu) {
  REQUIRE_GPU();
  uint64_t seed = 300;
  CudaCheckOptions o;
  for (DataType dt : kFloatTypes) {
    o.tolerance = dt == DataType::kFloat64 ? 1e-10 : 1e-4;
    for (Shape s :
         {Shape({7, 3}), Shape({4, 5, 6, 7}), Shape({2, 1, 33, 65})}) {
      for (int variant = 0; variant < 4; ++variant) {
        const bool global = variant % 2 == 1, relu = variant >= 2;
        const Shape c{s[1]};
        EXPECT_TRUE(
            CudaMatchesCpu(BatchNorm({{"use_global_stats", global},
                                      {"momentum", 0.7f},
                                      {"fuse_with_relu", relu}}),
                           {{"x", RandomTensor(dt, s, -2, 3, seed++)},
                            {"scale", RandomTensor(dt, c, 0.5, 1.5, seed++)},
                            {"bias", RandomTensor(dt, c, -1, 1, seed++)},
                            {"mean", RandomTensor(dt, c, -1, 1, seed++)},
                            {"var", RandomTensor(dt, c, 0.5, 2, seed++)}},
                           o))
            << DataTypeName(dt) << " " << s << " global " << global
            << " fuse_with_relu " << relu;
      }
    }
  }
}

}  // namespace
}  // namespace fluid
