// The CUDA kernels of the recurrent ops against their CPU kernels, float32
// and float64, forward and gradient, through sequences of different
// lengths, forward and reverse. Every test skips, saying why, without a
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
using testing::TensorMap;

const LoD kLoD{0, 3, 4, 8, 10};  // lengths 3, 1, 4, 2

TEST(LstmOpCuda, PeepholesReverseAndState) {
  REQUIRE_GPU();
  uint64_t seed = 400;
  const int64_t d = 3;
  for (DataType dt : kFloatTypes) {
    for (bool peep : {true, false}) {
      for (bool reverse : {false, true}) {
        auto op = MakeOp("lstm",
                         {{"Input", {"x"}},
                          {"Weight", {"w"}},
                          {"Bias", {"b"}},
                          {"H0", {"h0"}},
                          {"C0", {"c0"}}},
                         {{"Hidden", {"hidden"}},
                          {"Cell", {"cell"}},
                          {"BatchGate", {"gate"}},
                          {"BatchCellPreAct", {"pre"}}},
                         {{"use_peepholes", peep}, {"is_reverse", reverse}});
        TensorMap in{
            {"x", RandomTensor(dt, {10, 4 * d}, -1, 1, seed++)},
            {"w", RandomTensor(dt, {d, 4 * d}, -1, 1, seed++)},
            {"b", RandomTensor(dt, {1, (peep ? 7 : 4) * d}, -1, 1, seed++)},
            {"h0", RandomTensor(dt, {4, d}, -1, 1, seed++)},
            {"c0", RandomTensor(dt, {4, d}, -1, 1, seed++)}};
        in["x"].set_lod(kLoD);
        EXPECT_TRUE(CudaMatchesCpu(op, in)) << DataTypeName(dt) << " peepholes "
                                            << peep << " reverse " << reverse;
      }
    }
  }
}

TEST(GruOpCuda, OriginModeReverseStateAndBias) {
  REQUIRE_GPU();
  uint64_t seed = 500;
  const int64_t d = 3;
  for (DataType dt : kFloatTypes) {
    for (bool origin : {false, true}) {
      for (bool reverse : {false, true}) {
        std::vector<std::pair<std::string, std::vector<std::string>>> in{
            {"Input", {"x"}}, {"Weight", {"w"}}, {"H0", {"h0"}}};
        if (!origin) in.push_back({"Bias", {"b"}});
        auto op = MakeOp("gru", in,
                         {{"Hidden", {"hidden"}},
                          {"BatchGate", {"gate"}},
                          {"BatchResetHiddenPrev", {"reset"}},
                          {"BatchHidden", {"batch_hidden"}}},
                         {{"origin_mode", origin}, {"is_reverse", reverse}});
        TensorMap v{{"x", RandomTensor(dt, {10, 3 * d}, -1, 1, seed++)},
                    {"w", RandomTensor(dt, {d, 3 * d}, -1, 1, seed++)},
                    {"h0", RandomTensor(dt, {4, d}, -1, 1, seed++)},
                    {"b", RandomTensor(dt, {1, 3 * d}, -1, 1, seed++)}};
        v["x"].set_lod(kLoD);
        if (origin) v.erase("b");
        EXPECT_TRUE(CudaMatchesCpu(op, v)) << DataTypeName(dt) << " origin "
                                           << origin << " reverse " << reverse;
      }
    }
  }
}

TEST(LstmUnitOpCuda, ForgetBias) {
  REQUIRE_GPU();
  uint64_t seed = 600;
  for (DataType dt : kFloatTypes) {
    auto op = MakeOp("lstm_unit", {{"X", {"x"}}, {"C_prev", {"c_prev"}}},
                     {{"C", {"c"}}, {"H", {"h"}}}, {{"forget_bias", 0.5f}});
    EXPECT_TRUE(CudaMatchesCpu(
        op, {{"x", RandomTensor(dt, {5, 12}, -2, 2, seed++)},
             {"c_prev", RandomTensor(dt, {5, 3}, -1, 1, seed++)}}))
        << DataTypeName(dt);
  }
}

TEST(GruUnitOpCuda, OriginModeAndBias) {
  REQUIRE_GPU();
  uint64_t seed = 700;
  for (DataType dt : kFloatTypes) {
    for (bool origin : {false, true}) {
      auto op = MakeOp("gru_unit",
                       {{"Input", {"x"}},
                        {"HiddenPrev", {"h_prev"}},
                        {"Weight", {"w"}},
                        {"Bias", {"b"}}},
                       {{"Gate", {"gate"}},
                        {"ResetHiddenPrev", {"reset"}},
                        {"Hidden", {"hidden"}}},
                       {{"origin_mode", origin}});
      EXPECT_TRUE(CudaMatchesCpu(
          op, {{"x", RandomTensor(dt, {5, 9}, -1, 1, seed++)},
               {"h_prev", RandomTensor(dt, {5, 3}, -1, 1, seed++)},
               {"w", RandomTensor(dt, {3, 9}, -1, 1, seed++)},
               {"b", RandomTensor(dt, {1, 9}, -1, 1, seed++)}}))
          << DataTypeName(dt) << " origin " << origin;
    }
  }
}

}  // namespace
}  // namespace fluid
