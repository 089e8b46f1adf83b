// The CUDA kernels of the creation ops (fill_any_like, isinf / isnan /
// isfinite, eye, diag, range, linspace, the random _batch_size_like ops)
// against their CPU kernels. Every test skips, saying why, without a CUDA
// build or a visible device.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::MakeTensor;
using testing::RandomTensor;

testing::CudaCheckOptions NoGrad() {
  testing::CudaCheckOptions opt;
  opt.grad = false;
  opt.tolerance = 0;  // the same values exactly
  return opt;
}

TEST(CreationOpsCuda, Fills) {
  REQUIRE_GPU();
  Tensor x = RandomTensor<float>({3, 4}, -1, 1, 1);
  for (int32_t dt : {-1, 1, 2, 3}) {
    EXPECT_TRUE(
        CudaMatchesCpu(MakeOp("fill_any_like", {{"X", {"x"}}}, {{"Out", {"o"}}},
                              {{"value", 2.0f}, {"dtype", dt}}),
                       {{"x", x}}, NoGrad()))
        << dt;
  }
  EXPECT_TRUE(
      CudaMatchesCpu(MakeOp("eye", {}, {{"Out", {"o"}}},
                            {{"num_rows", int64_t{3}},
                             {"num_columns", int64_t{5}},
                             {"batch_shape", std::vector<int64_t>{2, 2}}}),
                     {}, NoGrad()));
  EXPECT_TRUE(
      CudaMatchesCpu(MakeOp("diag", {{"Diagonal", {"d"}}}, {{"Out", {"o"}}}),
                     {{"d", RandomTensor<double>({7}, -1, 1, 2)}}, NoGrad()));
  EXPECT_TRUE(CudaMatchesCpu(
      MakeOp("range", {}, {{"Out", {"o"}}},
             {{"start", 1.0},
              {"end", 100.0},
              {"step", 3.0},
              {"dtype", static_cast<int32_t>(DataType::kInt64)}}),
      {}, NoGrad()));
  EXPECT_TRUE(CudaMatchesCpu(
      MakeOp("linspace", {}, {{"Out", {"o"}}},
             {{"start", -1.0},
              {"stop", 2.0},
              {"num", int64_t{33}},
              {"dtype", static_cast<int32_t>(DataType::kFloat64)}}),
      {}, NoGrad()));
}

TEST(CreationOpsCuda, RandomBatchSizeLike) {
  REQUIRE_GPU();
  for (const char* op :
       {"uniform_random_batch_size_like", "gaussian_random_batch_size_like"}) {
    EXPECT_TRUE(CudaMatchesCpu(
        MakeOp(op, {{"Input", {"in"}}}, {{"Out", {"o"}}},
               {{"shape", std::vector<int64_t>{-1, 9}}, {"seed", int32_t{3}}}),
        {{"in", RandomTensor<float>({6, 2}, 0, 1, 1)}}, NoGrad()))
        << op;
  }
}

TEST(CreationOpsCuda, FiniteTests) {
  REQUIRE_GPU();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> big(5000, 1.0);
  for (const std::vector<double>& v :
       {std::vector<double>{1, 2}, std::vector<double>{1, -inf},
        std::vector<double>{std::numeric_limits<double>::quiet_NaN(), 1},
        big}) {
    for (const char* op : {"isinf", "isnan", "isfinite"}) {
      EXPECT_TRUE(CudaMatchesCpu(
          MakeOp(op, {{"X", {"x"}}}, {{"Out", {"o"}}}),
          {{"x", MakeTensor<double>({static_cast<int64_t>(v.size())}, v)}},
          NoGrad()))
          << op;
    }
  }
}

}  // namespace
}  // namespace fluid
