// gelu: the exact (erf) form and the tanh approximation against values
// written from their definitions in long double, the fp64 numeric
// gradient, and the reference values PyTorch 1.13 gives
// (tests/python/test_attention_layers.py compares against torch directly).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

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

}  // namespace
}  // namespace fluid
