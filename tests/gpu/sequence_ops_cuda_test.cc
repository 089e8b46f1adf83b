// The CUDA kernels of the sequence ops against their CPU kernels, float32
// and float64, forward and gradient, through sequences of different
// lengths (empty ones included). Every test skips, saying why, without a
// CUDA build or a visible device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;

Tensor Sequences(DataType dt, const Shape& s, const LoD& lod, uint64_t seed) {
  Tensor x = RandomTensor(dt, s, -2, 2, seed);
  x.set_lod(lod);
  return x;
}

TEST(SequencePoolOpCuda, EveryType) {
  REQUIRE_GPU();
  uint64_t seed = 300;
  for (DataType dt : kFloatTypes) {
    for (const char* type :
         {"AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"}) {
      auto op = MakeOp("sequence_pool", {{"X", {"x"}}},
                       {{"Out", {"out"}}, {"MaxIndex", {"index"}}},
                       {{"pooltype", std::string(type)}, {"pad_value", 1.5f}});
      EXPECT_TRUE(CudaMatchesCpu(
          op, {{"x", Sequences(dt, {9, 2, 3}, {0, 3, 3, 4, 9}, seed++)}}))
          << DataTypeName(dt) << " " << type;
    }
  }
}

TEST(SequenceSoftmaxOpCuda, DifferentLengths) {
  REQUIRE_GPU();
  uint64_t seed = 310;
  for (DataType dt : kFloatTypes) {
    auto op = MakeOp("sequence_softmax", {{"X", {"x"}}}, {{"Out", {"out"}}});
    EXPECT_TRUE(CudaMatchesCpu(
        op, {{"x", Sequences(dt, {8, 1}, {0, 2, 2, 7, 8}, seed++)}}))
        << DataTypeName(dt);
  }
}

TEST(SequenceExpandOpCuda, WithAndWithoutXLoD) {
  REQUIRE_GPU();
  uint64_t seed = 320;
  auto op = MakeOp("sequence_expand", {{"X", {"x"}}, {"Y", {"y"}}},
                   {{"Out", {"out"}}});
  for (DataType dt : kFloatTypes) {
    Tensor y = Sequences(dt, {5, 1}, {0, 2, 2, 5}, seed++);
    for (const LoD& x_lod : {LoD{}, LoD{0, 1, 4, 6}}) {
      Tensor x = RandomTensor(dt, {x_lod.empty() ? 3 : 6, 2}, -1, 1, seed++);
      x.set_lod(x_lod);
      EXPECT_TRUE(CudaMatchesCpu(op, {{"x", x}, {"y", y}}))
          << DataTypeName(dt) << " " << LoDToString(x_lod);
    }
  }
}

TEST(SequenceMaskOpCuda, GivenAndLongestMaxlen) {
  REQUIRE_GPU();
  testing::CudaCheckOptions no_grad;
  no_grad.grad = false;  // lengths to a mask: not differentiable
  for (int maxlen : {-1, 6}) {
    auto op = MakeOp("sequence_mask", {{"X", {"x"}}}, {{"Y", {"y"}}},
                     {{"maxlen", int32_t{maxlen}},
                      {"out_dtype", static_cast<int32_t>(DataType::kFloat32)}});
    EXPECT_TRUE(CudaMatchesCpu(
        op, {{"x", testing::MakeTensor<int64_t>({4}, {3, 0, 5, 1})}}, no_grad))
        << maxlen;
    EXPECT_TRUE(CudaMatchesCpu(
        op, {{"x", testing::MakeTensor<int32_t>({2, 1}, {2, 4})}}, no_grad))
        << maxlen;
  }
}

TEST(SequencePadOpCuda, PadAndUnpad) {
  REQUIRE_GPU();
  uint64_t seed = 330;
  auto pad = MakeOp("sequence_pad", {{"X", {"x"}}, {"PadValue", {"p"}}},
                    {{"Out", {"out"}}, {"Length", {"length"}}},
                    {{"padded_length", int32_t{4}}});
  auto unpad = MakeOp("sequence_unpad", {{"X", {"x"}}, {"Length", {"length"}}},
                      {{"Out", {"out"}}});
  for (DataType dt : kFloatTypes) {
    EXPECT_TRUE(CudaMatchesCpu(
        pad, {{"x", Sequences(dt, {6, 2}, {0, 2, 2, 5, 6}, seed++)},
              {"p", RandomTensor(dt, {2}, -1, 1, seed++)}}))
        << DataTypeName(dt);
    EXPECT_TRUE(CudaMatchesCpu(
        unpad, {{"x", RandomTensor(dt, {3, 4, 2}, -1, 1, seed++)},
                {"length", testing::MakeTensor<int64_t>({3}, {4, 0, 2})}}))
        << DataTypeName(dt);
  }
}

TEST(SequenceConvOpCuda, Windows) {
  REQUIRE_GPU();
  uint64_t seed = 340;
  for (DataType dt : kFloatTypes) {
    for (auto [length, start] : {std::pair{3, -1}, {2, 1}}) {
      auto op = MakeOp("sequence_conv", {{"X", {"x"}}, {"Filter", {"w"}}},
                       {{"Out", {"out"}}},
                       {{"contextLength", int32_t{length}},
                        {"contextStart", int32_t{start}}});
      EXPECT_TRUE(CudaMatchesCpu(
          op, {{"x", Sequences(dt, {8, 2}, {0, 3, 4, 4, 8}, seed++)},
               {"w", RandomTensor(dt, {length * 2, 3}, -1, 1, seed++)}}))
          << DataTypeName(dt) << " " << length << " from " << start;
    }
  }
}

}  // namespace
}  // namespace fluid
