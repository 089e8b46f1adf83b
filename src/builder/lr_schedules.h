// Learning-rate schedules as ops in the program (Fluid's
// fluid.layers.exponential_decay, ...): a persistable global step counter,
// incremented once per run by an `increment` op, and the learning rate
// computed from it by ordinary ops, so that every rank computes the same
// rate and a checkpoint carries the step. Everything is float64 (steps are
// exact up to 2^53); the optimizers read a float64 learning rate whatever
// their parameters' dtype.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fluid {

class ProgramBuilder;

// The name of the global step counter.
constexpr const char* kLrCounter = "@LR_DECAY_COUNTER@";

// The counter, created (starting so that the first run sees step 0) with
// its increment op on first use; later calls return the same var.
std::string GlobalStep(ProgramBuilder* b);

// A schedule and the arguments of its Fluid layer (unused ones ignored).
struct LrSchedule {
  // exponential_decay | natural_exp_decay | inverse_time_decay |
  // polynomial_decay | piecewise_decay | noam_decay | cosine_decay |
  // linear_lr_warmup
  std::string kind;
  float learning_rate = 1.0f;
  // linear_lr_warmup: the rate after the warmup when it is a var (another
  // schedule) rather than learning_rate.
  std::string learning_rate_var;
  int64_t decay_steps = 0;
  float decay_rate = 0.0f;
  bool staircase = false;
  float end_learning_rate = 0.0001f;
  float power = 1.0f;
  bool cycle = false;
  std::vector<int64_t> boundaries;
  std::vector<float> values;
  float d_model = 0.0f;
  int64_t warmup_steps = 0;
  int64_t step_each_epoch = 0;
  int64_t epochs = 0;
  float start_lr = 0.0f, end_lr = 0.0f;
};

// Appends the ops of `s` and returns the one-element float64 var holding
// the learning rate of the current step. Bad arguments are errors naming
// the layer and the argument.
std::string BuildLrSchedule(ProgramBuilder* b, const LrSchedule& s);

}  // namespace fluid
