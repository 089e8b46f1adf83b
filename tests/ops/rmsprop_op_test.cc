// rmsprop against a naive loop of Fluid's formula (epsilon under the root,
// lr inside the momentum buffer), plain and centered, with and without
// momentum, in place over several steps.
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

std::vector<double> NaiveRmsprop(std::vector<double> p,
                                 const std::vector<std::vector<double>>& gs,
                                 double lr, double rho, double eps,
                                 double momentum, bool centered) {
  const size_t n = p.size();
  std::vector<double> ms(n, 0), mg(n, 0), mom(n, 0);
  for (const auto& g : gs)
    for (size_t i = 0; i < n; ++i) {
      ms[i] = rho * ms[i] + (1 - rho) * g[i] * g[i];
      double var = ms[i];
      if (centered) {
        mg[i] = rho * mg[i] + (1 - rho) * g[i];
        var -= mg[i] * mg[i];
      }
      mom[i] = momentum * mom[i] + lr * g[i] / std::sqrt(var + eps);
      p[i] -= mom[i];
    }
  return p;
}

TEST(RmspropOp, InPlaceStepsMatchNaiveLoop) {
  const auto grads = GradSteps(15, 6, 60);
  Tensor p0 = RandomTensor<double>({15}, -1, 1, 5);
  Tensor zeros = MakeTensor<double>({15}, std::vector<double>(15, 0));
  for (bool centered : {false, true}) {
    for (float momentum : {0.0f, 0.9f}) {
      SCOPED_TRACE(::testing::Message()
                   << "centered " << centered << " momentum " << momentum);
      auto state = RunSteps(
          StateOptimizerOp("rmsprop", {"Moment", "MeanSquare", "MeanGrad"},
                           {{"decay", 0.9f},
                            {"epsilon", 1e-6f},
                            {"momentum", momentum},
                            {"centered", centered}}),
          {{"p", p0},
           {"moment", zeros},
           {"meansquare", zeros},
           {"meangrad", zeros},
           {"lr", MakeTensor<double>({1}, {0.01})}},
          "g", grads);
      EXPECT_TRUE(AllNear(
          ToVector<double>(state["p"]),
          NaiveRmsprop(ToVector<double>(p0), AsVectors(grads), 0.01,
                       double(0.9f), double(1e-6f), double(momentum), centered),
          1e-12));
    }
  }
}

}  // namespace
}  // namespace fluid
