#include <gtest/gtest.h>

#include <cmath>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/optimizer_ops.h"

namespace fluid {
namespace {

using testing::RunSteps;

using testing::MakeTensor;
using testing::MomentumOp;
using testing::RandomTensor;
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;

// Runs `op` once per gradient on persistable state (prepared once, state kept
// in the scope between runs) and returns the final state.
// torch.optim.SGD(momentum=mu, dampening=0, nesterov, weight_decay), written
// as torch writes it: the buffer is created on the first step as a copy of
// the (decayed) gradient.
std::vector<double> TorchSgdMomentum(std::vector<double> p,
                                     const std::vector<std::vector<double>>& gs,
                                     double lr, double mu, bool nesterov,
                                     double wd) {
  std::vector<double> buf;
  for (const auto& g : gs) {
    std::vector<double> d(p.size());
    for (size_t i = 0; i < p.size(); ++i)
      d[i] = wd != 0 ? g[i] + wd * p[i] : g[i];
    if (buf.empty()) {
      buf = d;
    } else {
      for (size_t i = 0; i < p.size(); ++i) buf[i] = mu * buf[i] + d[i];
    }
    for (size_t i = 0; i < p.size(); ++i) {
      double step = nesterov ? d[i] + mu * buf[i] : buf[i];
      p[i] -= lr * step;
    }
  }
  return p;
}

struct Case {
  float mu;
  bool nesterov;
  float wd;
};

TEST(MomentumOp, InPlaceStepsMatchTorchSgd) {
  const Shape shape{5, 4};
  const int steps = 6;
  std::vector<std::vector<double>> gref;
  std::vector<Tensor> grads;
  for (int s = 0; s < steps; ++s) {
    grads.push_back(RandomTensor<double>(shape, -1, 1, 100 + s));
    gref.push_back(ToVector<double>(grads.back()));
  }
  Tensor p0 = RandomTensor<double>(shape, -1, 1, 7);
  Tensor zeros = MakeTensor<double>(shape, std::vector<double>(20, 0.0));
  Tensor lr = MakeTensor<double>({1}, {0.05});
  for (Case c : {Case{0.9f, false, 0.0f}, Case{0.9f, true, 0.0f},
                 Case{0.5f, false, 0.01f}, Case{0.8f, true, 0.1f}}) {
    SCOPED_TRACE(::testing::Message() << "mu " << c.mu << " nesterov "
                                      << c.nesterov << " wd " << c.wd);
    auto state = RunSteps(MomentumOp(c.mu, c.nesterov, c.wd),
                          {{"p", p0}, {"v", zeros}, {"lr", lr}}, "g", grads);
    auto want = TorchSgdMomentum(ToVector<double>(p0), gref, 0.05, c.mu,
                                 c.nesterov, c.wd);
    auto got = ToVector<double>(state["p"]);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-13 * std::max(1.0, std::abs(want[i])))
          << "element " << i;
  }
}

TEST(MomentumOp, Float32MatchesFloat64) {
  const Shape shape{33};
  const int steps = 4;
  std::vector<Tensor> gd, gf;
  for (int s = 0; s < steps; ++s) {
    gd.push_back(RandomTensor<double>(shape, -1, 1, 200 + s));
    gf.push_back(RandomTensor<float>(shape, -1, 1, 200 + s));
  }
  auto run = [&](bool fp64) {
    TensorMap init;
    if (fp64) {
      init = {{"p", RandomTensor<double>(shape, -1, 1, 9)},
              {"v", MakeTensor<double>(shape, std::vector<double>(33, 0))},
              {"lr", MakeTensor<float>({1}, {0.1f})}};
    } else {
      init = {{"p", RandomTensor<float>(shape, -1, 1, 9)},
              {"v", MakeTensor<float>(shape, std::vector<float>(33, 0))},
              {"lr", MakeTensor<float>({1}, {0.1f})}};
    }
    return RunSteps(MomentumOp(0.9f, true, 0.01f), init, "g", fp64 ? gd : gf);
  };
  auto d = run(true), f = run(false);
  auto pd = ToVector<double>(d["p"]);
  auto pf = ToVector<float>(f["p"]);
  auto vd = ToVector<double>(d["v"]);
  auto vf = ToVector<float>(f["v"]);
  for (size_t i = 0; i < pd.size(); ++i) {
    EXPECT_NEAR(pf[i], pd[i], 1e-5);
    EXPECT_NEAR(vf[i], vd[i], 1e-5);
  }
}

TEST(MomentumOp, SeparateOutputsLeaveInputsAlone) {
  Tensor p = RandomTensor<double>({6}, -1, 1, 1);
  Tensor g = RandomTensor<double>({6}, -1, 1, 2);
  Tensor v = RandomTensor<double>({6}, -1, 1, 3);
  auto out = RunOp(
      MomentumOp(0.9f, false, 0.0f, "_out"),
      {{"p", p}, {"g", g}, {"v", v}, {"lr", MakeTensor<double>({1}, {0.5})}});
  auto pv = ToVector<double>(p), gv = ToVector<double>(g),
       vv = ToVector<double>(v);
  auto po = ToVector<double>(out["p_out"]), vo = ToVector<double>(out["v_out"]);
  for (size_t i = 0; i < 6; ++i) {
    double vn = double(0.9f) * vv[i] + gv[i];
    EXPECT_NEAR(vo[i], vn, 1e-15);
    EXPECT_NEAR(po[i], pv[i] - 0.5 * vn, 1e-15);
  }
}

TEST(MomentumOp, VelocityShapeMismatchNamesVar) {
  try {
    RunOp(MomentumOp(0.9f, false, 0.0f),
          {{"p", RandomTensor<double>({2, 3}, -1, 1, 1)},
           {"g", RandomTensor<double>({2, 3}, -1, 1, 2)},
           {"v", RandomTensor<double>({3}, -1, 1, 3)},
           {"lr", MakeTensor<double>({1}, {0.1})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("Velocity 'v'"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fluid
