// The learning-rate schedules step by step against Fluid's formulas written
// as naive loops: the program is run once per step and the rate fetched;
// the counter is persistable and advanced once per run.
#include "src/builder/lr_schedules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "src/builder/program_builder.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace {

// The rate of steps 0 .. steps-1 (float literals rounded as the builder
// rounds them: attrs are float32).
std::vector<double> Rates(const LrSchedule& s, int steps) {
  proto::ProgramDesc main = NewProgram(), startup = NewProgram();
  ProgramBuilder b(&main, &startup);
  const std::string lr = BuildLrSchedule(&b, s);
  Executor exe;
  Scope scope;
  exe.RunOnce(startup, &scope);
  std::vector<double> out;
  for (int i = 0; i < steps; ++i) {
    std::vector<Tensor> f;
    exe.RunOnce(main, &scope, {}, {lr}, &f);
    out.push_back(f[0].data<double>()[0]);
  }
  return out;
}

void ExpectRates(const LrSchedule& s, int steps,
                 const std::function<double(double)>& want, double tol) {
  std::vector<double> got = Rates(s, steps);
  for (int t = 0; t < steps; ++t)
    EXPECT_NEAR(got[t], want(t), tol * std::max(1.0, std::abs(want(t))))
        << s.kind << " step " << t;
}

double F(float v) { return static_cast<double>(v); }

TEST(LrSchedules, ExponentialNaturalInverseTime) {
  for (bool staircase : {false, true}) {
    LrSchedule s;
    s.learning_rate = 0.1f;
    s.decay_steps = 3;
    s.decay_rate = 0.5f;
    s.staircase = staircase;
    auto d = [&](double t) { return staircase ? std::floor(t / 3) : t / 3; };
    s.kind = "exponential_decay";
    ExpectRates(
        s, 8, [&](double t) { return F(0.1f) * std::pow(0.5, d(t)); }, 1e-12);
    s.kind = "natural_exp_decay";
    ExpectRates(
        s, 8, [&](double t) { return F(0.1f) * std::exp(-0.5 * d(t)); }, 1e-12);
    s.kind = "inverse_time_decay";
    ExpectRates(
        s, 8, [&](double t) { return F(0.1f) / (1 + 0.5 * d(t)); }, 1e-12);
  }
}

TEST(LrSchedules, Polynomial) {
  for (bool cycle : {false, true}) {
    LrSchedule s;
    s.kind = "polynomial_decay";
    s.learning_rate = 0.1f;
    s.decay_steps = 4;
    s.end_learning_rate = 0.01f;
    s.power = 2.0f;
    s.cycle = cycle;
    ExpectRates(
        s, 11,
        [&](double t) {
          double steps = 4, step = t;
          if (cycle) {
            steps = 4 * std::max(1.0, std::ceil(t / 4));
          } else {
            step = std::min(t, 4.0);
          }
          return (F(0.1f) - F(0.01f)) * std::pow(1 - step / steps, 2.0) +
                 F(0.01f);
        },
        1e-7);
  }
}

TEST(LrSchedules, PiecewiseIsExactlyTheValues) {
  LrSchedule s;
  s.kind = "piecewise_decay";
  s.boundaries = {2, 5};
  s.values = {1.0f, 0.5f, 0.1f};
  std::vector<double> got = Rates(s, 8);
  for (int t = 0; t < 8; ++t)
    EXPECT_EQ(got[t], t < 2 ? 1.0 : (t < 5 ? 0.5 : F(0.1f))) << t;
}

TEST(LrSchedules, NoamCosineWarmup) {
  LrSchedule s;
  s.kind = "noam_decay";
  s.d_model = 512;
  s.warmup_steps = 4;
  ExpectRates(
      s, 9,
      [](double t) {
        const double n = t + 1;
        return std::pow(512, -0.5) *
               std::min(std::pow(n, -0.5), n * std::pow(4, -1.5));
      },
      1e-6);
  s.kind = "cosine_decay";
  s.learning_rate = 0.2f;
  s.step_each_epoch = 3;
  s.epochs = 4;
  ExpectRates(
      s, 13,
      [](double t) {
        return F(0.2f) / 2 * (std::cos(std::floor(t / 3) * M_PI / 4) + 1);
      },
      1e-6);
  s.kind = "linear_lr_warmup";
  s.learning_rate = 0.3f;
  s.warmup_steps = 4;
  s.start_lr = 0.0f;
  s.end_lr = 0.2f;
  ExpectRates(
      s, 7, [](double t) { return t < 4 ? F(0.2f) * t / 4 : F(0.3f); }, 1e-7);
}

TEST(LrSchedules, OneCounterForAllSchedules) {
  proto::ProgramDesc main = NewProgram(), startup = NewProgram();
  ProgramBuilder b(&main, &startup);
  LrSchedule s;
  s.kind = "exponential_decay";
  s.decay_steps = 1;
  s.decay_rate = 0.5f;
  BuildLrSchedule(&b, s);
  BuildLrSchedule(&b, s);
  int increments = 0;
  for (const auto& op : main.blocks(0).ops())
    increments += op.type() == "increment";
  EXPECT_EQ(increments, 1);
  EXPECT_TRUE(GetVarDesc(main.blocks(0), kLrCounter).persistable());
}

TEST(LrSchedules, BadArgumentsNameLayerAndArgument) {
  LrSchedule s;
  s.kind = "piecewise_decay";
  s.boundaries = {2, 5};
  s.values = {1.0f};
  proto::ProgramDesc main = NewProgram(), startup = NewProgram();
  ProgramBuilder b(&main, &startup);
  try {
    BuildLrSchedule(&b, s);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("piecewise_decay"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'values'"), std::string::npos) << msg;
  }
  s.kind = "exponential_decay";
  s.decay_steps = 0;
  EXPECT_THROW(BuildLrSchedule(&b, s), Error);
}

}  // namespace
}  // namespace fluid
