// lars_momentum against a naive loop of Fluid's formula, including the
// fallback to the plain learning rate when a norm is zero.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/testing/state_optimizer_ops.h"

namespace fluid {
namespace {

using testing::AllNear;
using testing::AsVectors;
using testing::GradSteps;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunSteps;
using testing::StateOptimizerOp;
using testing::ToVector;

std::vector<double> NaiveLars(std::vector<double> p,
                              const std::vector<std::vector<double>>& gs,
                              double lr, double mu, double coeff, double wd) {
  std::vector<double> v(p.size(), 0);
  for (const auto& g : gs) {
    double pn = 0, gn = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      pn += p[i] * p[i];
      gn += g[i] * g[i];
    }
    pn = std::sqrt(pn);
    gn = std::sqrt(gn);
    const double local =
        pn > 0 && gn > 0 ? lr * coeff * pn / (gn + wd * pn) : lr;
    for (size_t i = 0; i < p.size(); ++i) {
      v[i] = mu * v[i] + local * (g[i] + wd * p[i]);
      p[i] -= v[i];
    }
  }
  return p;
}

TEST(LarsMomentumOp, InPlaceStepsMatchNaiveLoop) {
  const auto grads = GradSteps(20, 5, 90);
  Tensor zeros = MakeTensor<double>({20}, std::vector<double>(20, 0));
  // A zero parameter takes the plain learning rate on its first step.
  for (Tensor p0 : {RandomTensor<double>({20}, -1, 1, 8), zeros}) {
    auto state = RunSteps(StateOptimizerOp("lars_momentum", {"Velocity"},
                                           {{"mu", 0.9f},
                                            {"lars_coeff", 0.001f},
                                            {"lars_weight_decay", 0.0005f}}),
                          {{"p", p0},
                           {"velocity", zeros},
                           {"lr", MakeTensor<double>({1}, {1.0})}},
                          "g", grads);
    EXPECT_TRUE(
        AllNear(ToVector<double>(state["p"]),
                NaiveLars(ToVector<double>(p0), AsVectors(grads), 1.0,
                          double(0.9f), double(0.001f), double(0.0005f)),
                1e-13));
  }
}

}  // namespace
}  // namespace fluid
