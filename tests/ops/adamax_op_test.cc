// adamax against a naive loop of Fluid's formula (epsilon added to the
// decayed norm), with Beta1Pow advanced between steps as the optimizer's
// scale op does.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/testing/state_optimizer_ops.h"

namespace fluid {
namespace {

using testing::AllNear;
using testing::GradSteps;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::StateOptimizerOp;
using testing::TensorMap;
using testing::ToVector;

TEST(AdamaxOp, StepsMatchNaiveLoop) {
  const double b1 = double(0.9f), b2 = double(0.999f), eps = double(1e-8f);
  const auto grads = GradSteps(10, 5, 70);
  Tensor p0 = RandomTensor<double>({10}, -1, 1, 6);
  Tensor zeros = MakeTensor<double>({10}, std::vector<double>(10, 0));
  TensorMap state = {{"p", p0},
                     {"moment", zeros},
                     {"infnorm", zeros},
                     {"lr", MakeTensor<double>({1}, {0.002})}};
  std::vector<double> p = ToVector<double>(p0), m(10, 0), u(10, 0);
  double pow = b1;
  const auto op = StateOptimizerOp(
      "adamax", {"Moment", "InfNorm"},
      {{"beta1", 0.9f}, {"beta2", 0.999f}, {"epsilon", 1e-8f}});
  for (const Tensor& gt : grads) {
    state["g"] = gt;
    state["b1p"] = MakeTensor<double>({1}, {pow});
    TensorMap out = RunOp(op, state);
    for (const char* v : {"p", "moment", "infnorm"}) state[v] = out[v];
    const auto g = ToVector<double>(gt);
    for (size_t i = 0; i < p.size(); ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      u[i] = std::max(b2 * u[i] + eps, std::abs(g[i]));
      p[i] -= 0.002 / (1 - pow) * m[i] / u[i];
    }
    pow *= b1;
  }
  EXPECT_TRUE(AllNear(ToVector<double>(state["p"]), p, 1e-13));
  EXPECT_TRUE(AllNear(ToVector<double>(state["infnorm"]), u, 1e-15));
}

}  // namespace
}  // namespace fluid
