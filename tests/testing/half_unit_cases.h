// The cases of the 16-bit (bfloat16, float16) kernels of elementwise_max,
// elementwise_min, clip, lstm_unit and gru_unit, each against the float32
// CPU kernel on the same rounded inputs (tests/testing/half_vs_float32.h),
// run on the CPU by tests/ops/half_unit_ops_test.cc and on CUDA by
// tests/gpu/half_unit_ops_cuda_test.cc. The tolerances, per op, output and
// type, say why here. u is the unit roundoff of the 16-bit type: one
// rounding errs by at most u relative, 2^-8 for bfloat16 (8 significant
// bits) and 2^-11 for float16 (11); one unit in the last place is 2u.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/half_vs_float32.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace testing {

inline double UnitRoundoff(DataType dt) {
  return dt == DataType::kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
}

// ---- elementwise_max, elementwise_min

// Out and dX select an element of X, Y or dOut: no arithmetic, so they
// equal float32's exactly, ties included (the comparison is made on the
// same values). dY sums dOut over the broadcast dims in float and rounds
// once; float32 sums in another order, so a sum near a rounding boundary
// may round to the neighbouring value: one unit in the last place, 2u.
// Where Y is not broadcast each dY is one term, and exact.
inline HalfVsFloat32 MaxMinCheck(bool y_broadcast) {
  HalfVsFloat32 c;
  c.tolerance = [y_broadcast](DataType dt, const std::string& var) {
    return var == "y@GRAD" && y_broadcast ? 2 * UnitRoundoff(dt) : 0.0;
  };
  return c;
}

// X and Y with every third element of X equal to the Y it meets, so that
// ties are checked in every layout.
inline TensorMap MaxMinInputs(const BroadcastCase& bc, uint64_t seed) {
  TensorMap in{{"x", RandomTensor<float>(bc.x, -2, 2, seed)},
               {"y", RandomTensor<float>(bc.y, -2, 2, seed + 1)}};
  const std::vector<int64_t> idx = BroadcastIndex(bc.x, bc.y, bc.axis);
  float* x = in["x"].mutable_data<float>();
  const float* y = in["y"].data<float>();
  for (size_t i = 0; i < idx.size(); i += 3) x[i] = y[idx[i]];
  return in;
}

// Every broadcast layout and two large ones (several blocks of columns,
// long runs), for both ops.
inline void CheckMaxMin(const Place& place) {
  std::vector<BroadcastCase> cases = BroadcastCases();
  cases.push_back({{300, 70}, {70}, -1});
  cases.push_back({{4, 16, 20, 20}, {16}, 1});
  uint64_t seed = 5;
  for (const char* type : {"elementwise_max", "elementwise_min"}) {
    for (const BroadcastCase& bc : cases) {
      SCOPED_TRACE(::testing::Message() << type << " " << bc.x << " and "
                                        << bc.y << " axis " << bc.axis);
      const bool broadcast = bc.x.numel() != bc.y.numel();
      ExpectHalfNearFloat32(ElementwiseOp(type, bc.axis),
                            MaxMinInputs(bc, seed += 2), MaxMinCheck(broadcast),
                            place);
    }
  }
}

// On a tie (X == Y) the whole gradient goes to Y, as float32's kernel
// sends it (elementwise_functors.h): dX is 0 there and dY is dOut.
inline void CheckMaxMinTies(const Place& place) {
  for (const char* type : {"elementwise_max", "elementwise_min"}) {
    for (DataType dt : kHalfTypes) {
      SCOPED_TRACE(::testing::Message() << type << " " << DataTypeName(dt));
      const Tensor x = ToHalf(RandomTensor<float>({6, 5}, -2, 2, 40), dt);
      const Tensor dout = ToHalf(RandomTensor<float>({6, 5}, -1, 1, 41), dt);
      const proto::OpDesc grad = OpRegistry::Global()
                                     .Get(type)
                                     .grad_maker()(ElementwiseOp(type, -1))
                                     .at(0);
      TensorMap g = RunOp(
          grad, {{"x", x}, {"y", x}, {"out", x}, {GradVarName("out"), dout}}, 1,
          place);
      const Tensor dx = ToFloat32(g.at(GradVarName("x")));
      const Tensor dy = ToFloat32(g.at(GradVarName("y")));
      const Tensor want = ToFloat32(dout);
      for (int64_t i = 0; i < x.numel(); ++i) {
        EXPECT_EQ(dx.data<float>()[i], 0.0f) << i;
        EXPECT_EQ(dy.data<float>()[i], want.data<float>()[i]) << i;
      }
    }
  }
}

// ---- clip

// An element inside the bounds passes unchanged; one outside becomes the
// bound, which the 16-bit kernel rounds once (half a unit in the last
// place, u; the bounds here are not 16-bit values). The gradient is dOut
// or 0 by float comparisons of the same values against the same bounds:
// exact.
inline void CheckClip(const Place& place) {
  HalfVsFloat32 c;
  c.tolerance = [](DataType dt, const std::string& var) {
    return var == "out" ? UnitRoundoff(dt) : 0.0;
  };
  TensorMap in{{"x", RandomTensor<float>({9, 40}, -2, 2, 60)}};
  // Elements on the bounds themselves, where the gradient is 0.
  float* x = in["x"].mutable_data<float>();
  x[3] = -0.75f;
  x[7] = 1.25f;
  for (const auto& [lo, hi] :
       std::vector<std::pair<float, float>>{{-0.7f, 0.9f}, {-0.75f, 1.25f}}) {
    SCOPED_TRACE(::testing::Message() << "min " << lo << " max " << hi);
    ExpectHalfNearFloat32(MakeOp("clip", {{"X", {"x"}}}, {{"Out", {"out"}}},
                                 {{"min", lo}, {"max", hi}}),
                          in, c, place);
  }
}

// ---- lstm_unit

// The gates, C and the gradients are computed in float32 from the same
// values by the same arithmetic as float32's kernel, so the float32
// outputs (C, C_prev@GRAD) agree to float32's own rounding: 1e-6, room for
// a device's exp and tanh, which may differ from the host's in float32's
// last places. H and X@GRAD are those values rounded once: half a unit in
// the last place, and a value that float32 puts near a rounding boundary
// may round to its neighbour, so one unit, 2u.
inline HalfVsFloat32 LstmUnitCheck() {
  HalfVsFloat32 c;
  c.keep = {"c_prev"};
  c.f32_outputs = {"c", "c_prev@GRAD"};
  c.tolerance = [](DataType dt, const std::string& var) {
    return var == "c" || var == "c_prev@GRAD" ? 1e-6 : 2 * UnitRoundoff(dt);
  };
  return c;
}

inline proto::OpDesc LstmUnitOp(float forget_bias) {
  return MakeOp("lstm_unit", {{"X", {"x"}}, {"C_prev", {"c_prev"}}},
                {{"C", {"c"}}, {"H", {"h"}}}, {{"forget_bias", forget_bias}});
}

inline void CheckLstmUnit(const Place& place) {
  uint64_t seed = 100;
  for (float forget_bias : {0.0f, 1.0f}) {
    for (int64_t n : {int64_t{5}, int64_t{64}}) {
      SCOPED_TRACE(::testing::Message()
                   << "forget_bias " << forget_bias << " rows " << n);
      const int64_t d = 12;
      ExpectHalfNearFloat32(
          LstmUnitOp(forget_bias),
          {{"x", RandomTensor<float>({n, 4 * d}, -3, 3, seed++)},
           {"c_prev", RandomTensor<float>({n, d}, -2, 2, seed++)}},
          LstmUnitCheck(), place);
    }
  }
}

// ---- gru_unit

// The step computes in float32 as float32's kernel does, but its GEMMs read
// 16-bit operands; each rounding errs by at most u times what it rounds. Here
// Input and HiddenPrev lie in [-1, 1], the weights in [-1/4, 1/4], D = 8, dOut
// in [-1, 1], four rows, so every product of the step's GEMMs is within 2.
// Forward: HiddenPrev rounded as the first GEMM's operand and (bfloat16 with
// oneDNN) that product rounded move h W_ur by up to 2u + 2u, so u and r by u
// (sigmoid' <= 1/4); ResetHiddenPrev = r * h_prev, rounded, by u + u = 2u; its
// product with W_c by 4u, rounded by 2u more, so c (tanh, the default), and
// Gate, by 6u; h = (1 - u) h_prev + u c by 2u + 6u = 8u. Backward, both runs
// fed the same forward values: dcand and the update gate's gradient are
// float32's exactly; dcand rounded as an operand and that product rounded move
// d(r h_prev) by 2u + 2u = 4u, so the reset gate's gradient by u; Input@GRAD is
// these rounded once (u + u = 2u), Bias@GRAD their sum over four rows (4u);
// HiddenPrev@GRAD adds 4u through r and, through W_ur^T, 2u from the rounded
// gate gradients, 2u from the reset gate's error and 2u from the rounded
// product (10u); Weight@GRAD sums over four rows the products of the rounded
// HiddenPrev and gate gradients (4u) and the reset gate's error (4u), then is
// rounded (u of itself): 9u, 10u allowed. Each relative to max(|a|, |b|, 1),
// for both types.
inline HalfVsFloat32 GruUnitCheck() {
  HalfVsFloat32 c;
  c.keep = {"h_prev", "b"};
  c.f32_outputs = {"gate", "hidden", "h_prev@GRAD", "b@GRAD"};
  c.tolerance = [](DataType dt, const std::string& var) {
    const std::map<std::string, double> units = {
        {"reset", 2},  {"gate", 6},         {"hidden", 8}, {"x@GRAD", 2},
        {"b@GRAD", 4}, {"h_prev@GRAD", 10}, {"w@GRAD", 10}};
    return units.at(var) * UnitRoundoff(dt);
  };
  return c;
}

inline proto::OpDesc GruUnitOp(bool bias, bool origin) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"Input", {"x"}}, {"HiddenPrev", {"h_prev"}}, {"Weight", {"w"}}};
  if (bias) in.push_back({"Bias", {"b"}});
  return MakeOp("gru_unit", in,
                {{"Gate", {"gate"}},
                 {"ResetHiddenPrev", {"reset"}},
                 {"Hidden", {"hidden"}}},
                {{"origin_mode", origin}});
}

inline TensorMap GruUnitInputs(int64_t n, bool bias, uint64_t seed) {
  const int64_t d = 8;
  TensorMap in{{"x", RandomTensor<float>({n, 3 * d}, -1, 1, seed)},
               {"h_prev", RandomTensor<float>({n, d}, -1, 1, seed + 1)},
               {"w", RandomTensor<float>({d, 3 * d}, -0.25, 0.25, seed + 2)}};
  if (bias) in["b"] = RandomTensor<float>({1, 3 * d}, -0.5, 0.5, seed + 3);
  return in;
}

inline void CheckGruUnit(const Place& place, int threads = 1) {
  uint64_t seed = 300;
  HalfVsFloat32 c = GruUnitCheck();
  c.threads = threads;
  for (bool origin : {false, true}) {
    for (bool bias : {true, false}) {
      SCOPED_TRACE(::testing::Message()
                   << "origin_mode " << origin << " bias " << bias);
      ExpectHalfNearFloat32(GruUnitOp(bias, origin),
                            GruUnitInputs(4, bias, seed += 10), c, place);
    }
  }
}

}  // namespace testing
}  // namespace fluid
