// The CUDA kernels of cast, assign and one_hot against their CPU kernels:
// every pair of dtypes for cast, every dtype for assign, both output dtypes
// for one_hot. Every test skips, saying why, without a CUDA build or a
// visible device.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::MakeTensor;
using testing::RandomTensor;

constexpr DataType kAll[] = {DataType::kFloat32, DataType::kFloat64,
                             DataType::kInt32, DataType::kInt64};

// Values in [-50, 50) of `dtype` (whole numbers for the int dtypes).
Tensor Values(DataType dtype, uint64_t seed) {
  Tensor f = RandomTensor<double>({3, 41}, -50, 50, seed);
  auto op = MakeOp("cast", {{"X", {"x"}}}, {{"Out", {"out"}}},
                   {{"in_dtype", static_cast<int32_t>(DataType::kFloat64)},
                    {"out_dtype", static_cast<int32_t>(dtype)}});
  return testing::RunOp(op, {{"x", f}})["out"];
}

TEST(CastOpCuda, EveryPair) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  for (DataType in : kAll) {
    for (DataType out : kAll) {
      auto op = MakeOp("cast", {{"X", {"x"}}}, {{"Out", {"out"}}},
                       {{"in_dtype", static_cast<int32_t>(in)},
                        {"out_dtype", static_cast<int32_t>(out)}});
      testing::CudaCheckOptions o;
      o.grad = in != DataType::kInt32 && in != DataType::kInt64 &&
               out != DataType::kInt32 && out != DataType::kInt64;
      EXPECT_TRUE(CudaMatchesCpu(op, {{"x", Values(in, seed++)}}, o))
          << DataTypeName(in) << " -> " << DataTypeName(out);
    }
  }
}

TEST(AssignOpCuda, EveryDtype) {
  REQUIRE_GPU();
  uint64_t seed = 30;
  for (DataType dt : kAll) {
    testing::CudaCheckOptions o;
    o.grad = dt == DataType::kFloat32 || dt == DataType::kFloat64;
    auto op = MakeOp("assign", {{"X", {"x"}}}, {{"Out", {"out"}}});
    EXPECT_TRUE(CudaMatchesCpu(op, {{"x", Values(dt, seed++)}}, o))
        << DataTypeName(dt);
  }
}

TEST(OneHotOpCuda, Dtypes) {
  REQUIRE_GPU();
  Tensor ids = MakeTensor<int64_t>({6, 1}, {3, 0, 9, 9, 4, 1});
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64}) {
    auto op =
        MakeOp("one_hot", {{"X", {"x"}}}, {{"Out", {"out"}}},
               {{"depth", int32_t{10}}, {"dtype", static_cast<int32_t>(dt)}});
    testing::CudaCheckOptions o;
    o.grad = false;
    EXPECT_TRUE(CudaMatchesCpu(op, {{"x", ids}}, o)) << DataTypeName(dt);
  }
  // allow_out_of_range: ids outside [0, depth) give rows of zeros on both.
  Tensor outside = MakeTensor<int64_t>({5, 1}, {3, -1, 10, 0, 42});
  auto op = MakeOp("one_hot", {{"X", {"x"}}}, {{"Out", {"out"}}},
                   {{"depth", int32_t{10}}, {"allow_out_of_range", true}});
  testing::CudaCheckOptions o;
  o.grad = false;
  EXPECT_TRUE(CudaMatchesCpu(op, {{"x", outside}}, o));
}

TEST(AssignValueOpCuda, Dtypes) {
  REQUIRE_GPU();
  testing::CudaCheckOptions o;
  o.grad = false;
  auto op = [](DataType dt, const char* slot, const Attribute& values) {
    return MakeOp("assign_value", {}, {{"Out", {"out"}}},
                  {{"shape", std::vector<int64_t>{2, 2}},
                   {"dtype", static_cast<int32_t>(dt)},
                   {slot, values}});
  };
  EXPECT_TRUE(CudaMatchesCpu(op(DataType::kFloat32, "fp32_values",
                                std::vector<float>{1.5f, -2, 0.1f, 3}),
                             {}, o));
  EXPECT_TRUE(CudaMatchesCpu(
      op(DataType::kInt32, "int32_values", std::vector<int32_t>{1, -2, 3, 4}),
      {}, o));
  EXPECT_TRUE(CudaMatchesCpu(op(DataType::kInt64, "int64_values",
                                std::vector<int64_t>{1LL << 40, -2, 3, 4}),
                             {}, o));
}

}  // namespace
}  // namespace fluid
