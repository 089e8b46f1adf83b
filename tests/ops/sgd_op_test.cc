#include <gtest/gtest.h>

#include <cmath>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/optimizer_ops.h"

namespace fluid {
namespace {

using testing::RunSteps;

using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::SgdOp;
using testing::ToVector;

// Runs `op` once per gradient on persistable state, as a trainer does: the
// program is prepared once and the state lives in the scope between runs.
// Returns the final values of `state`'s vars.
TEST(SgdOp, OneStep) {
  Tensor p = RandomTensor<double>({3, 4}, -1, 1, 1);
  Tensor g = RandomTensor<double>({3, 4}, -1, 1, 2);
  Tensor lr = MakeTensor<double>({1}, {0.25});
  auto out = RunOp(SgdOp("_out"), {{"p", p}, {"g", g}, {"lr", lr}});
  ASSERT_EQ(out["p_out"].shape(), Shape({3, 4}));
  auto pv = ToVector<double>(p), gv = ToVector<double>(g);
  auto got = ToVector<double>(out["p_out"]);
  for (size_t i = 0; i < pv.size(); ++i)
    EXPECT_DOUBLE_EQ(got[i], pv[i] - 0.25 * gv[i]);
}

TEST(SgdOp, InPlaceStepsMatchReference) {
  for (bool fp64 : {true, false}) {
    const int steps = 5;
    std::vector<Tensor> grads;
    std::vector<std::vector<double>> gref;
    for (int s = 0; s < steps; ++s) {
      Tensor gd = RandomTensor<double>({7, 3}, -1, 1, 10 + s);
      gref.push_back(ToVector<double>(gd));
      grads.push_back(fp64 ? gd : RandomTensor<float>({7, 3}, -1, 1, 10 + s));
    }
    Tensor p0d = RandomTensor<double>({7, 3}, -1, 1, 3);
    Tensor p0 = fp64 ? p0d : RandomTensor<float>({7, 3}, -1, 1, 3);
    // A float32 learning rate drives a float64 parameter too.
    Tensor lr = MakeTensor<float>({1}, {0.1f});
    auto state = RunSteps(SgdOp(), {{"p", p0}, {"lr", lr}}, "g", grads);

    std::vector<double> ref = ToVector<double>(p0d);
    for (int s = 0; s < steps; ++s)
      for (size_t i = 0; i < ref.size(); ++i)
        ref[i] -= double(0.1f) * gref[s][i];
    for (size_t i = 0; i < ref.size(); ++i) {
      double got =
          fp64 ? state["p"].data<double>()[i] : state["p"].data<float>()[i];
      EXPECT_NEAR(got, ref[i], fp64 ? 1e-14 : 1e-6) << "element " << i;
    }
  }
}

TEST(SgdOp, GradShapeMismatchNamesVars) {
  try {
    RunOp(MakeOp("sgd",
                 {{"Param", {"weight"}},
                  {"Grad", {"weight_grad"}},
                  {"LearningRate", {"lr"}}},
                 {{"ParamOut", {"weight"}}}),
          {{"weight", RandomTensor<double>({2, 3}, -1, 1, 1)},
           {"weight_grad", RandomTensor<double>({3, 2}, -1, 1, 1)},
           {"lr", MakeTensor<double>({1}, {0.1})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("weight_grad"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  }
}

TEST(SgdOp, LearningRateMustBeScalar) {
  EXPECT_THROW(RunOp(SgdOp(), {{"p", RandomTensor<double>({2}, -1, 1, 1)},
                               {"g", RandomTensor<double>({2}, -1, 1, 2)},
                               {"lr", MakeTensor<double>({2}, {0.1, 0.2})}}),
               Error);
}

}  // namespace
}  // namespace fluid
