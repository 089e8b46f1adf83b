// gelu: the exact (erf) form and the tanh approximation against values
// written from their definitions in long double, the fp64 numeric
// gradient, and the reference values PyTorch 1.13 gives
// (tests/python/test_attention_layers.py compares against torch directly).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/activation_functors.h"
#include "ops/gelu_cpu.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using ops::GeluFloats;
using ops::GeluGradFloats;
using testing::CheckGradient;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc Gelu(bool approximate) {
  return MakeOp("gelu", {{"X", {"x"}}}, {{"Out", {"out"}}},
                {{"approximate", approximate}});
}

long double NaiveGelu(long double x, bool approximate) {
  if (approximate) {
    const long double pi = 3.141592653589793238462643383279502884L;
    const long double u = std::sqrt(2.0L / pi) * (x + 0.044715L * x * x * x);
    return 0.5L * x * (1.0L + std::tanh(u));
  }
  return 0.5L * x * (1.0L + std::erf(x / std::sqrt(2.0L)));
}

TEST(GeluOp, ForwardMatchesDefinition) {
  for (bool approximate : {false, true}) {
    Tensor x = RandomTensor<double>({7, 13}, -6, 6, approximate ? 2 : 1);
    auto got = ToVector<double>(RunOp(Gelu(approximate), {{"x", x}})["out"]);
    auto xv = ToVector<double>(x);
    for (size_t i = 0; i < xv.size(); ++i)
      ASSERT_NEAR(got[i], static_cast<double>(NaiveGelu(xv[i], approximate)),
                  1e-15)
          << "approximate=" << approximate << " x=" << xv[i];
  }
}

// torch.nn.functional.gelu(torch.tensor([...], dtype=torch.float64)) and
// gelu(..., approximate='tanh') in PyTorch 1.13.
TEST(GeluOp, MatchesTorchValues) {
  Tensor x = MakeTensor<double>({5}, {-3.0, -0.5, 0.0, 1.0, 2.5});
  auto exact = ToVector<double>(RunOp(Gelu(false), {{"x", x}})["out"]);
  const std::vector<double> torch_exact = {
      -0.00404969409489, -0.154268769363, 0.0, 0.8413447460685, 2.484475836686};
  for (size_t i = 0; i < exact.size(); ++i)
    EXPECT_NEAR(exact[i], torch_exact[i], 1e-10) << i;
  auto tanh_form = ToVector<double>(RunOp(Gelu(true), {{"x", x}})["out"]);
  const std::vector<double> torch_tanh = {-0.003637392081773, -0.1542859901749,
                                          0.0, 0.8411919906083, 2.48491573391};
  for (size_t i = 0; i < tanh_form.size(); ++i)
    EXPECT_NEAR(tanh_form[i], torch_tanh[i], 1e-10) << i;
}

TEST(GeluOp, Gradient) {
  for (bool approximate : {false, true}) {
    EXPECT_TRUE(CheckGradient(
        Gelu(approximate),
        {{"x", RandomTensor<double>({4, 9}, -4, 4, approximate ? 12 : 11)}}))
        << "approximate=" << approximate;
  }
}

TEST(GeluOp, DefaultIsExactAndGradReadsX) {
  proto::OpDesc op = MakeOp("gelu", {{"X", {"x"}}}, {{"Out", {"out"}}});
  Tensor x = MakeTensor<double>({2}, {1.0, -1.0});
  auto got = ToVector<double>(RunOp(op, {{"x", x}})["out"]);
  EXPECT_NEAR(got[0], static_cast<double>(NaiveGelu(1.0L, false)), 1e-15);
  EXPECT_NEAR(got[1], static_cast<double>(NaiveGelu(-1.0L, false)), 1e-15);
  std::vector<proto::OpDesc> grads =
      OpRegistry::Global().Get("gelu").grad_maker()(op);
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "gelu_grad");
  EXPECT_EQ(OpInput(grads[0], "X"), std::vector<std::string>({"x"}));
}

TEST(GeluOp, FloatMatchesDouble) {
  auto d = ToVector<double>(
      RunOp(Gelu(false), {{"x", RandomTensor<double>({50}, -5, 5, 3)}})["out"]);
  auto f = ToVector<float>(
      RunOp(Gelu(false), {{"x", RandomTensor<float>({50}, -5, 5, 3)}})["out"]);
  for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-6);
}

// ---- the vectorised float32 gelu (ops/gelu_cpu.h) over a dense grid

// Every multiple of 2^-12 in [-16, 16].
std::vector<float> DenseGrid() {
  std::vector<float> x;
  for (int i = -16 * 4096; i <= 16 * 4096; ++i) x.push_back(i / 4096.0f);
  return x;
}

long double NaiveGeluGrad(long double x, bool approximate) {
  if (approximate) {
    const long double pi = 3.141592653589793238462643383279502884L;
    const long double k = std::sqrt(2.0L / pi);
    const long double t = std::tanh(k * (x + 0.044715L * x * x * x));
    const long double du = k * (1.0L + 3.0L * 0.044715L * x * x);
    return 0.5L * (1.0L + t) + 0.5L * x * (1.0L - t * t) * du;
  }
  return 0.5L * std::erfc(-x / std::sqrt(2.0L)) +
         x * std::exp(-0.5L * x * x) /
             std::sqrt(2.0L * 3.141592653589793238462643383279502884L);
}

// The exact form's reference from erfc, accurate in the negative tail.
long double ExactGelu(long double x) {
  return 0.5L * x * std::erfc(-x / std::sqrt(2.0L));
}

// The tanh form's reference as x * sigmoid(2 u), accurate in the tail.
long double TanhGelu(long double x) {
  const long double pi = 3.141592653589793238462643383279502884L;
  const long double u = std::sqrt(2.0L / pi) * (x + 0.044715L * x * x * x);
  return x / (1.0L + std::exp(-2.0L * u));
}

// The bounds gelu_cpu.h states, both forms: gelu within 2.5e-7 absolute
// (half a float32 unit at |x| near 5) and, for x in [-12, 0) where gelu is
// a normal float32, within a relative 2e-5; the gradient within 2e-7.
TEST(GeluFloats, ErrorBoundsOnDenseGrid) {
  const std::vector<float> x = DenseGrid();
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> out(n), dx(n), ones(n, 1.0f);
  for (bool approximate : {false, true}) {
    GeluFloats(x.data(), out.data(), n, approximate);
    GeluGradFloats(x.data(), ones.data(), dx.data(), n, approximate);
    double worst = 0, worst_rel = 0, worst_grad = 0;
    for (int64_t i = 0; i < n; ++i) {
      const long double ref = approximate ? TanhGelu(x[i]) : ExactGelu(x[i]);
      const double err = std::fabs(static_cast<double>(out[i] - ref));
      worst = std::max(worst, err);
      if (x[i] < 0 && x[i] >= -12 && std::fabs(ref) > 1e-37L)
        worst_rel = std::max(worst_rel, err / std::fabs((double)ref));
      worst_grad =
          std::max(worst_grad, std::fabs(static_cast<double>(
                                   dx[i] - NaiveGeluGrad(x[i], approximate))));
    }
    EXPECT_LE(worst, 2.5e-7) << "approximate=" << approximate;
    EXPECT_LE(worst_rel, 2e-5) << "approximate=" << approximate;
    EXPECT_LE(worst_grad, 2e-7) << "approximate=" << approximate;
  }
}

// Close to the scalar float32 functor it replaced: gelu within 2.5e-7 and
// the gradient within 2e-7 (tanh form: 6e-7, where the functor's own
// 1 + tanh(u) cancels; it is 5.6e-7 from the reference there).
TEST(GeluFloats, CloseToScalarFunctor) {
  const std::vector<float> x = DenseGrid();
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> out(n), dx(n), ones(n, 1.0f);
  for (bool approximate : {false, true}) {
    ops::GeluFunctor f;
    f.approximate = approximate;
    GeluFloats(x.data(), out.data(), n, approximate);
    GeluGradFloats(x.data(), ones.data(), dx.data(), n, approximate);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(out[i], f.Forward(x[i]), 2.5e-7)
          << "approximate=" << approximate << " x=" << x[i];
      ASSERT_NEAR(dx[i], f.Backward(x[i], 1.0f), approximate ? 6e-7 : 2e-7)
          << "approximate=" << approximate << " x=" << x[i];
    }
  }
}

// NaN stays NaN; +inf gives +inf; very negative inputs give -0; a partial
// last packet and any split give the same bits as the whole array.
std::vector<float> RandomVector(int64_t n, uint64_t seed) {
  return ToVector<float>(RandomTensor<float>({n}, -8, 8, seed));
}

TEST(GeluFloats, EdgesAndSplits) {
  const std::vector<float> edge = {NAN, INFINITY, -1e30f, -100.0f, 1e30f};
  std::vector<float> out(edge.size());
  GeluFloats(edge.data(), out.data(), static_cast<int64_t>(edge.size()), false);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], INFINITY);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[3], 0.0f);
  EXPECT_EQ(out[4], 1e30f);
  const std::vector<float> x = RandomVector(1000, 21);
  std::vector<float> whole(x.size()), parts(x.size());
  GeluFloats(x.data(), whole.data(), 1000, false);
  for (int64_t b = 0; b < 1000; b += 37)
    GeluFloats(x.data() + b, parts.data() + b, std::min<int64_t>(37, 1000 - b),
               false);
  EXPECT_EQ(whole, parts);
}

// The bfloat16 kernel on every bfloat16 value in [-16, 16]: within half a
// bfloat16 unit (2^-8 relative) of the exact gelu of its input, plus the
// float32 bound; the gradient likewise against dOut = 1. Run on two
// threads, so the pool's split is exercised.
TEST(GeluOp, Bfloat16OnEveryValue) {
  std::vector<bfloat16> xs;
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const bfloat16 v = bfloat16::FromBits(static_cast<uint16_t>(bits));
    const float f = static_cast<float>(v);
    if (std::isfinite(f) && std::fabs(f) <= 16) xs.push_back(v);
  }
  const int64_t n = static_cast<int64_t>(xs.size());
  Tensor x = MakeTensor<bfloat16>({n}, xs);
  Tensor ones =
      MakeTensor<bfloat16>({n}, std::vector<bfloat16>(n, bfloat16(1.0f)));
  for (bool approximate : {false, true}) {
    auto out =
        ToVector<bfloat16>(RunOp(Gelu(approximate), {{"x", x}}, 2)["out"]);
    proto::OpDesc grad =
        OpRegistry::Global().Get("gelu").grad_maker()(Gelu(approximate))[0];
    auto dx = ToVector<bfloat16>(RunOp(
        grad, {{"x", x}, {GradVarName("out"), ones}}, 2)[GradVarName("x")]);
    for (int64_t i = 0; i < n; ++i) {
      const long double xv = static_cast<float>(xs[i]);
      const long double ref = approximate ? TanhGelu(xv) : ExactGelu(xv);
      const long double dref = NaiveGeluGrad(xv, approximate);
      ASSERT_LE(std::fabs(static_cast<float>(out[i]) - ref),
                std::fabs(ref) / 256 + 2.5e-7)
          << "approximate=" << approximate << " x=" << (double)xv;
      ASSERT_LE(std::fabs(static_cast<float>(dx[i]) - dref),
                std::fabs(dref) / 256 + 2e-7)
          << "approximate=" << approximate << " x=" << (double)xv;
    }
  }
}

}  // namespace
}  // namespace fluid
