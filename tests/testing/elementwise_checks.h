// CPU checks shared by the tests of the elementwise binary ops given by a
// functor (elementwise_sub, _div, _max, _min, _pow): the forward and both
// gradients against a naive loop over every broadcast layout, in float64,
// on one thread and on the pool, the numeric gradient check, and float32
// against float64. Each op's test (tests/ops/elementwise_<op>_op_test.cc)
// runs them with its math and the operand ranges where that math is smooth.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tests/testing/gradient_checker.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace testing {

// The op's math on one pair: out = f(x, y), and its partial derivatives.
struct BinaryMath {
  std::function<double(double, double)> f, dfdx, dfdy;
};

// Forward and grad op of `type` against `math`, naively looped over X with
// Y's element found by BroadcastIndex; `threads` > 1 runs on the pool, with
// cases large enough to take its parallel paths.
inline void ExpectMatchesNaive(const std::string& type, const BinaryMath& math,
                               const OperandRanges& r, int threads) {
  const std::vector<BroadcastCase> large = {{{300, 200}, {200}, -1},
                                            {{8, 16, 32, 32}, {16}, 1},
                                            {{70000}, {70000}, -1},
                                            {{300, 200}, {300, 1}, 0},
                                            {{70000, 2}, {1}, -1}};
  const std::vector<BroadcastCase>& cases =
      threads > 1 ? large : BroadcastCases();
  uint64_t seed = 11;
  for (const BroadcastCase& c : cases) {
    Tensor x = RandomTensor<double>(c.x, r.x_lo, r.x_hi, seed++);
    Tensor y = RandomTensor<double>(c.y, r.y_lo, r.y_hi, seed++);
    Tensor g = RandomTensor<double>(c.x, -1, 1, seed++);
    auto xv = ToVector<double>(x), yv = ToVector<double>(y);
    auto gv = ToVector<double>(g);
    auto yi = BroadcastIndex(c.x, c.y, c.axis);

    Tensor out = RunOp(ElementwiseOp(type, c.axis), {{"x", x}, {"y", y}},
                       threads)["out"];
    ASSERT_EQ(out.shape(), c.x);
    auto got = ToVector<double>(out);
    for (size_t i = 0; i < xv.size(); ++i)
      ASSERT_NEAR(got[i], math.f(xv[i], yv[yi[i]]), 1e-12)
          << type << " " << c.x << " and " << c.y << " axis " << c.axis
          << " at " << i;

    auto grad = MakeOp(
        type + "_grad", {{"X", {"x"}}, {"Y", {"y"}}, {"Out@GRAD", {"g"}}},
        {{"X@GRAD", {"dx"}}, {"Y@GRAD", {"dy"}}}, {{"axis", c.axis}});
    auto res = RunOp(grad, {{"x", x}, {"y", y}, {"g", g}}, threads);
    std::vector<double> want_dy(yv.size(), 0.0);
    for (size_t i = 0; i < gv.size(); ++i)
      want_dy[yi[i]] += gv[i] * math.dfdy(xv[i], yv[yi[i]]);
    ASSERT_EQ(res["dx"].shape(), c.x);
    auto dx = ToVector<double>(res["dx"]);
    for (size_t i = 0; i < gv.size(); ++i)
      ASSERT_NEAR(dx[i], gv[i] * math.dfdx(xv[i], yv[yi[i]]), 1e-12)
          << type << " " << c.x << " dx at " << i;
    ASSERT_EQ(res["dy"].shape(), c.y);
    auto dy = ToVector<double>(res["dy"]);
    for (size_t j = 0; j < dy.size(); ++j)
      ASSERT_NEAR(dy[j], want_dy[j], 1e-9 * (1 + std::abs(want_dy[j])))
          << type << " " << c.x << " dy at " << j;
  }
}

// The numeric gradient check of both inputs over every broadcast layout,
// and of Y alone.
inline void ExpectGradientsCheck(const std::string& type,
                                 const OperandRanges& r) {
  uint64_t seed = 50;
  for (const BroadcastCase& c : BroadcastCases()) {
    EXPECT_TRUE(CheckGradient(
        ElementwiseOp(type, c.axis),
        {{"x", RandomTensor<double>(c.x, r.x_lo, r.x_hi, seed)},
         {"y", RandomTensor<double>(c.y, r.y_lo, r.y_hi, seed + 1)}}))
        << type << " " << c.x << " and " << c.y << " axis " << c.axis;
    seed += 2;
  }
  GradCheckOptions opt;
  opt.wrt = {"y"};
  EXPECT_TRUE(
      CheckGradient(ElementwiseOp(type, 1),
                    {{"x", RandomTensor<double>({2, 3, 4}, r.x_lo, r.x_hi, 3)},
                     {"y", RandomTensor<double>({3}, r.y_lo, r.y_hi, 4)}},
                    opt))
      << type << " Y only";
}

inline void ExpectFloatMatchesDouble(const std::string& type,
                                     const OperandRanges& r) {
  for (const BroadcastCase& c : BroadcastCases()) {
    auto run = [&](DataType dt) {
      return RunOp(ElementwiseOp(type, c.axis),
                   {{"x", RandomTensor(dt, c.x, r.x_lo, r.x_hi, 5)},
                    {"y", RandomTensor(dt, c.y, r.y_lo, r.y_hi, 6)}})["out"];
    };
    auto d = ToVector<double>(run(DataType::kFloat64));
    auto f = ToVector<float>(run(DataType::kFloat32));
    ASSERT_EQ(d.size(), f.size());
    for (size_t i = 0; i < d.size(); ++i)
      EXPECT_NEAR(f[i], d[i], 1e-5 * (1 + std::abs(d[i]))) << type << " " << i;
  }
}

// elementwise_max/min: where X equals Y (Y broadcast over X's rows) the
// output is that value and the whole gradient goes to Y, as in Fluid.
inline void ExpectTieGoesToY(const std::string& type) {
  Tensor y = RandomTensor<double>({3}, -1, 1, 8);
  auto yv = ToVector<double>(y);
  std::vector<double> xv(6);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = yv[i % 3];
  Tensor x = MakeTensor<double>({2, 3}, xv);
  Tensor g = RandomTensor<double>({2, 3}, -1, 1, 9);
  auto gv = ToVector<double>(g);
  auto out = ToVector<double>(
      RunOp(ElementwiseOp(type, -1), {{"x", x}, {"y", y}})["out"]);
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(out[i], xv[i]) << i;
  auto grad =
      MakeOp(type + "_grad", {{"X", {"x"}}, {"Y", {"y"}}, {"Out@GRAD", {"g"}}},
             {{"X@GRAD", {"dx"}}, {"Y@GRAD", {"dy"}}});
  auto res = RunOp(grad, {{"x", x}, {"y", y}, {"g", g}});
  auto dxv = ToVector<double>(res["dx"]);
  auto dyv = ToVector<double>(res["dy"]);
  for (size_t i = 0; i < dxv.size(); ++i) EXPECT_EQ(dxv[i], 0.0) << i;
  for (size_t j = 0; j < 3; ++j)
    EXPECT_DOUBLE_EQ(dyv[j], gv[j] + gv[j + 3]) << j;
}

}  // namespace testing
}  // namespace fluid
