// adadelta against a naive loop of Fluid's formula (no learning rate), in
// place over several steps.
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

TEST(AdadeltaOp, InPlaceStepsMatchNaiveLoop) {
  const double rho = double(0.95f), eps = double(1e-6f);
  const auto grads = GradSteps(9, 6, 80);
  Tensor p0 = RandomTensor<double>({9}, -1, 1, 7);
  Tensor zeros = MakeTensor<double>({9}, std::vector<double>(9, 0));
  auto state = RunSteps(
      StateOptimizerOp("adadelta", {"AvgSquaredGrad", "AvgSquaredUpdate"},
                       {{"rho", 0.95f}, {"epsilon", 1e-6f}}),
      {{"p", p0}, {"avgsquaredgrad", zeros}, {"avgsquaredupdate", zeros}}, "g",
      grads);
  std::vector<double> p = ToVector<double>(p0), sg(9, 0), su(9, 0);
  for (const auto& g : AsVectors(grads))
    for (size_t i = 0; i < p.size(); ++i) {
      sg[i] = rho * sg[i] + (1 - rho) * g[i] * g[i];
      const double upd = -std::sqrt((su[i] + eps) / (sg[i] + eps)) * g[i];
      su[i] = rho * su[i] + (1 - rho) * upd * upd;
      p[i] += upd;
    }
  EXPECT_TRUE(AllNear(ToVector<double>(state["p"]), p, 1e-13));
  EXPECT_TRUE(AllNear(ToVector<double>(state["avgsquaredupdate"]), su, 1e-13));
}

}  // namespace
}  // namespace fluid
