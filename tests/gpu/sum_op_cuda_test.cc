// The CUDA kernels of sum against its CPU kernels: input counts around the
// kernel's group of 8, and Out bound to inputs. float32 and float64, and
// int32 and int64 (exactly). Every
// test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaCheckOptions;
using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::RandomTensor;
using testing::TensorMap;

TEST(SumOpCuda, InputCounts) {
  REQUIRE_GPU();
  uint64_t seed = 300;
  for (DataType dt : kFloatTypes) {
    // Counts around the 8-input group.
    for (int n : {1, 2, 3, 8, 9, 17}) {
      for (Shape s : {Shape({1}), Shape({3, 5}), Shape({3, 1, 1500})}) {
        TensorMap in;
        std::vector<std::string> names;
        for (int i = 0; i < n; ++i) {
          names.push_back("x" + std::to_string(i));
          in[names.back()] = RandomTensor(dt, s, -1, 1, seed++);
        }
        auto op = MakeOp("sum", {{"X", names}}, {{"Out", {"out"}}});
        EXPECT_TRUE(CudaMatchesCpu(op, in))
            << DataTypeName(dt) << " " << n << " inputs " << s;
      }
    }
  }
}

// Out bound to an input, once or several times, as the autodiff's gradient
// accumulation does.
TEST(SumOpCuda, InPlace) {
  REQUIRE_GPU();
  const std::vector<std::vector<std::string>> aliases = {
      {"a", "b"},
      {"b", "a"},
      {"b", "a", "b", "a", "a"},
      {"a", "a"},
      {"a"},
      {"b", "b", "b", "b", "b", "b", "b", "b", "b", "a"},
      {"a", "b", "b", "b", "b", "b", "b", "b", "b", "b", "a"}};
  for (DataType dt : kFloatTypes) {
    for (const auto& xs : aliases) {
      TensorMap in = {{"a", RandomTensor(dt, {3, 700}, -1, 1, 5)}};
      for (const auto& x : xs)
        if (x == "b") in["b"] = RandomTensor(dt, {3, 700}, -1, 1, 6);
      auto op = MakeOp("sum", {{"X", xs}}, {{"Out", {"a"}}});
      EXPECT_TRUE(CudaMatchesCpu(op, in))
          << DataTypeName(dt) << " " << xs.size() << " inputs";
    }
  }
}

// Integer terms: the same bits as the CPU's, with Out bound to inputs too.
TEST(SumOpCuda, Integers) {
  REQUIRE_GPU();
  for (DataType dt : {DataType::kInt32, DataType::kInt64}) {
    for (const std::vector<std::string>& xs :
         std::vector<std::vector<std::string>>{
             {"b", "c"},
             {"a", "b", "c", "b", "c", "b", "c", "b", "c", "b"},
             {"b", "a", "a"}}) {
      TensorMap in;
      for (const char* name : {"a", "b", "c"}) {
        Tensor t;
        t.set_dtype(dt);
        t.Resize({5, 600});
        t.raw_mutable_data(Place::CPU());
        for (int64_t i = 0; i < t.numel(); ++i) {
          const int64_t v = (i * 31 + name[0] * 977) % 4001 - 2000;
          if (dt == DataType::kInt32) {
            t.mutable_data<int32_t>()[i] = static_cast<int32_t>(v);
          } else {
            t.mutable_data<int64_t>()[i] = v;
          }
        }
        in[name] = t;
      }
      auto op = MakeOp("sum", {{"X", xs}}, {{"Out", {"a"}}});
      CudaCheckOptions exact;
      exact.tolerance = 0;
      exact.grad = false;  // counts have no gradient
      EXPECT_TRUE(CudaMatchesCpu(op, in, exact))
          << DataTypeName(dt) << " " << xs.size() << " inputs";
    }
  }
}

}  // namespace
}  // namespace fluid
