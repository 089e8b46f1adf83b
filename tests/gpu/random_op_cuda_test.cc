// uniform_random, gaussian_random and truncated_gaussian_random on CUDA draw on
// the host with the CPU generator: the same seed gives the same bits on both
// places, float32 and float64. Every test skips, saying why, without a CUDA
// build or a visible device.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::kFloatTypes;
using testing::RunOp;

// Bit-for-bit equality of two host tensors.
::testing::AssertionResult SameBits(const Tensor& cpu, const Tensor& cuda) {
  if (cpu.dtype() != cuda.dtype() || cpu.shape() != cuda.shape())
    return ::testing::AssertionFailure()
           << "CUDA " << DataTypeName(cuda.dtype()) << " " << cuda.shape()
           << " vs CPU " << DataTypeName(cpu.dtype()) << " " << cpu.shape();
  if (cpu.bytes() > 0 &&
      std::memcmp(cpu.raw_data(), cuda.raw_data(), cpu.bytes()) != 0)
    return ::testing::AssertionFailure() << "values differ";
  return ::testing::AssertionSuccess();
}

TEST(RandomOpCuda, UniformRandomSameBits) {
  REQUIRE_GPU();
  struct Range {
    float lo, hi;
  };
  for (DataType dt : kFloatTypes) {
    for (int32_t seed : {0, 1, 123, -7}) {
      for (const Range& r :
           std::vector<Range>{{-1, 1}, {0, 0.001f}, {2, 2}, {-5, 3}}) {
        for (const std::vector<int64_t>& shape :
             std::vector<std::vector<int64_t>>{{0}, {1}, {7}, {33, 65}}) {
          auto op = MakeOp("uniform_random", {}, {{"Out", {"fc_0.w"}}},
                           {{"shape", shape},
                            {"min", r.lo},
                            {"max", r.hi},
                            {"seed", seed},
                            {"dtype", static_cast<int32_t>(dt)}});
          Tensor cpu = RunOp(op, {}, 1, Place::CPU())["fc_0.w"];
          Tensor cuda = RunOp(op, {}, 1, Place::CUDA(0))["fc_0.w"];
          EXPECT_TRUE(SameBits(cpu, cuda))
              << DataTypeName(dt) << " seed " << seed << " [" << r.lo << ", "
              << r.hi << ") " << Shape(shape);
        }
      }
    }
  }
}

// gaussian_random and truncated_gaussian_random share their attrs.
void ExpectGaussianSameBits(const std::string& type) {
  struct Dist {
    float mean, stddev;
  };
  for (DataType dt : kFloatTypes) {
    for (int32_t seed : {0, 1, 123, -7}) {
      for (const Dist& d :
           std::vector<Dist>{{0, 1}, {0.5f, 0.02f}, {-3, 0}, {1, 10}}) {
        // Odd sizes leave the second value of the last pair unused.
        for (const std::vector<int64_t>& shape :
             std::vector<std::vector<int64_t>>{{0}, {1}, {7}, {33, 65}}) {
          auto op = MakeOp(type, {}, {{"Out", {"conv.w"}}},
                           {{"shape", shape},
                            {"mean", d.mean},
                            {"std", d.stddev},
                            {"seed", seed},
                            {"dtype", static_cast<int32_t>(dt)}});
          Tensor cpu = RunOp(op, {}, 1, Place::CPU())["conv.w"];
          Tensor cuda = RunOp(op, {}, 1, Place::CUDA(0))["conv.w"];
          EXPECT_TRUE(SameBits(cpu, cuda))
              << type << " " << DataTypeName(dt) << " seed " << seed << " N("
              << d.mean << ", " << d.stddev << "^2) " << Shape(shape);
        }
      }
    }
  }
}

TEST(RandomOpCuda, GaussianRandomSameBits) {
  REQUIRE_GPU();
  ExpectGaussianSameBits("gaussian_random");
}

TEST(RandomOpCuda, TruncatedGaussianRandomSameBits) {
  REQUIRE_GPU();
  ExpectGaussianSameBits("truncated_gaussian_random");
}

}  // namespace
}  // namespace fluid
