// adagrad and decayed_adagrad against naive loops of Fluid's formulas, in
// place over several steps.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/testing/state_optimizer_ops.h"

namespace fluid {
namespace {

using testing::AllNear;
using testing::AsVectors;
using testing::ErrorOf;
using testing::GradSteps;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunSteps;
using testing::StateOptimizerOp;
using testing::ToVector;

// decay 1 with weight 1 on g^2 is plain adagrad.
std::vector<double> NaiveAdagrad(std::vector<double> p,
                                 const std::vector<std::vector<double>>& gs,
                                 double lr, double decay, double keep,
                                 double eps, double m0) {
  std::vector<double> m(p.size(), m0);
  for (const auto& g : gs)
    for (size_t i = 0; i < p.size(); ++i) {
      m[i] = decay * m[i] + keep * g[i] * g[i];
      p[i] -= lr * g[i] / (std::sqrt(m[i]) + eps);
    }
  return p;
}

TEST(AdagradOp, InPlaceStepsMatchNaiveLoop) {
  const auto grads = GradSteps(12, 6, 40);
  Tensor p0 = RandomTensor<double>({12}, -1, 1, 3);
  for (double m0 : {0.0, 0.1}) {
    auto state = RunSteps(
        StateOptimizerOp("adagrad", {"Moment"}, {{"epsilon", 1e-6f}}),
        {{"p", p0},
         {"moment", MakeTensor<double>({12}, std::vector<double>(12, m0))},
         {"lr", MakeTensor<double>({1}, {0.1})}},
        "g", grads);
    EXPECT_TRUE(AllNear(ToVector<double>(state["p"]),
                        NaiveAdagrad(ToVector<double>(p0), AsVectors(grads),
                                     0.1, 1.0, 1.0, double(1e-6f), m0),
                        1e-13));
  }
}

TEST(DecayedAdagradOp, InPlaceStepsMatchNaiveLoop) {
  const auto grads = GradSteps(12, 6, 50);
  Tensor p0 = RandomTensor<double>({12}, -1, 1, 4);
  auto state = RunSteps(
      StateOptimizerOp("decayed_adagrad", {"Moment"},
                       {{"decay", 0.9f}, {"epsilon", 1e-6f}}),
      {{"p", p0},
       {"moment", MakeTensor<double>({12}, std::vector<double>(12, 0))},
       {"lr", MakeTensor<float>({1}, {0.05f})}},
      "g", grads);
  EXPECT_TRUE(AllNear(
      ToVector<double>(state["p"]),
      NaiveAdagrad(ToVector<double>(p0), AsVectors(grads), double(0.05f),
                   double(0.9f), 1.0 - double(0.9f), double(1e-6f), 0.0),
      1e-13));
}

TEST(AdagradOp, MomentShapeMismatchNamesVar) {
  std::string msg = ErrorOf(StateOptimizerOp("adagrad", {"Moment"}, {}),
                            {{"p", RandomTensor<double>({2, 3}, -1, 1, 1)},
                             {"g", RandomTensor<double>({2, 3}, -1, 1, 2)},
                             {"moment", RandomTensor<double>({3}, -1, 1, 3)},
                             {"lr", MakeTensor<double>({1}, {0.1})}});
  EXPECT_NE(msg.find("Moment 'moment'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
