// The CUDA checks that the elementwise binary ops share: the same
// broadcast layouts, larger reductions of dY, Out bound to X, one gradient
// asked for; X and Y drawn from the op's OperandRanges. Each op's test
// (tests/gpu/elementwise_<op>_op_cuda_test.cc) runs them with its op type; they
// expect REQUIRE_GPU() to have passed.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace testing {

// Larger reductions of dY: several row chunks of the column sum, several
// segments of the row sum, a multi-block full sum.
inline const std::vector<BroadcastCase>& LargeBroadcastCases() {
  static const std::vector<BroadcastCase> cases = {
      {{300, 200}, {200}, -1},     // column sums in 5 row chunks
      {{1000, 3}, {3}, -1},        // few columns, many chunks
      {{8, 16, 32, 32}, {16}, 1},  // conv bias, 8192 terms per channel
      {{300, 200}, {300, 1}, 0},   // pre == 1, post == 200
      {{70000, 2}, {1}, -1},       // full sum over 140000 terms
      {{70000}, {70000}, -1},      // same shape, many blocks
      {{2, 5, 3000}, {5}, 1},      // 6000 terms per entry: 2 segments
  };
  return cases;
}

// `type` over `cases` in both float types, X and Y drawn from seeds
// `seed`, `seed` + 1, `seed` + 2, ...; float32 held to `f32_tolerance`
// (< 0: the default).
inline void ExpectBroadcastsMatchCpu(const std::string& type,
                                     const std::vector<BroadcastCase>& cases,
                                     uint64_t seed, double f32_tolerance = -1,
                                     const OperandRanges& r = {}) {
  for (DataType dt : kFloatTypes) {
    CudaCheckOptions opt;
    if (dt == DataType::kFloat32) opt.tolerance = f32_tolerance;
    for (const BroadcastCase& c : cases) {
      TensorMap in = {{"x", RandomTensor(dt, c.x, r.x_lo, r.x_hi, seed)},
                      {"y", RandomTensor(dt, c.y, r.y_lo, r.y_hi, seed + 1)}};
      seed += 2;
      EXPECT_TRUE(CudaMatchesCpu(ElementwiseOp(type, c.axis), in, opt))
          << type << " " << DataTypeName(dt) << " " << c.x << " and " << c.y
          << " axis " << c.axis;
    }
  }
}

// The sums of dY differ from the CPU's in order only; float32 sums of
// thousands of terms round differently at about 1e-5 relative.
inline void ExpectLargeBroadcastsMatchCpu(const std::string& type,
                                          const OperandRanges& r = {}) {
  ExpectBroadcastsMatchCpu(type, LargeBroadcastCases(), 100, 1e-4, r);
}

// Out bound to X: written in place.
inline void ExpectInPlaceMatchesCpu(const std::string& type,
                                    const OperandRanges& r = {}) {
  for (DataType dt : kFloatTypes) {
    TensorMap in = {{"x", RandomTensor(dt, {4, 3, 5}, r.x_lo, r.x_hi, 7)},
                    {"y", RandomTensor(dt, {3}, r.y_lo, r.y_hi, 8)}};
    EXPECT_TRUE(CudaMatchesCpu(ElementwiseOp(type, 1, "x"), in))
        << type << " " << DataTypeName(dt);
  }
}

// The grad op of `type` with only one of the two gradients asked for.
inline void ExpectOneSidedGradMatchesCpu(const std::string& type,
                                         const OperandRanges& r = {}) {
  const std::string grad_type = type + "_grad";
  for (DataType dt : kFloatTypes) {
    TensorMap in = {{"x", RandomTensor(dt, {6, 4, 5}, r.x_lo, r.x_hi, 21)},
                    {"y", RandomTensor(dt, {4}, r.y_lo, r.y_hi, 22)},
                    {"g", RandomTensor(dt, {6, 4, 5}, -1, 1, 23)}};
    for (bool want_x : {true, false}) {
      auto op =
          MakeOp(grad_type, {{"X", {"x"}}, {"Y", {"y"}}, {"Out@GRAD", {"g"}}},
                 {{"X@GRAD", {want_x ? "dx" : kEmptyVarName}},
                  {"Y@GRAD", {want_x ? kEmptyVarName : "dy"}}},
                 {{"axis", 1}});
      EXPECT_TRUE(CudaMatchesCpu(op, in))
          << grad_type << " " << DataTypeName(dt) << " want_x " << want_x;
    }
  }
}

}  // namespace testing
}  // namespace fluid
