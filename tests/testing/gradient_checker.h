// The one numeric gradient checker every differentiable op's test calls.
//
// It runs the op through the real path: registry -> grad-op maker ->
// executor. The scalar checked is f = sum_o <o, R_o> over the chosen outputs,
// with fixed random R_o; the analytic gradient comes from the op's generated
// grad ops fed R_o as the output gradients, the numeric one from central
// differences in float64. An element passes when
// |analytic - numeric| <= tolerance * max(|analytic|, |numeric|, 1).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "src/framework/executor.h"

namespace fluid {
namespace testing {

using TensorMap = std::map<std::string, Tensor>;

template <typename T>
Tensor MakeTensor(const Shape& shape, const std::vector<T>& values) {
  Tensor t;
  T* p = t.mutable_data<T>(shape);
  FLUID_ENFORCE(static_cast<int64_t>(values.size()) == t.numel(),
                "MakeTensor: ", values.size(), " values for shape ", shape);
  std::copy(values.begin(), values.end(), p);
  return t;
}

template <typename T>
Tensor RandomTensor(const Shape& shape, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t;
  T* p = t.mutable_data<T>(shape);
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(dist(rng));
  return t;
}

// RandomTensor<float> or RandomTensor<double>, as `dtype` says.
Tensor RandomTensor(DataType dtype, const Shape& shape, double lo, double hi,
                    uint64_t seed);

// A float32 or float64 tensor of `shape` with every element `value`.
Tensor FilledTensor(DataType dtype, const Shape& shape, double value);

template <typename T>
std::vector<T> ToVector(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}

// Runs `op` once on `inputs` (var name -> value) and returns every output
// var by name.
// On a CUDA `place` the inputs are copied to the device and the outputs
// returned in host memory.
TensorMap RunOp(const proto::OpDesc& op, const TensorMap& inputs,
                int threads = 1, const Place& place = Place::CPU());

// The message of the fluid::Error that `fn` throws, or "" when it throws
// none: tests check that errors name what they should.
std::string ErrorOf(const std::function<void()>& fn);
// The message of the error that running `op` on `inputs` (RunOp) throws,
// or "".
std::string ErrorOf(const proto::OpDesc& op, const TensorMap& inputs);
// The fluid::Error that `fn` throws, for tests that check more than its
// message (the code, the errno, the op context). A test failure when `fn`
// throws none; an internal error with an empty message is returned then.
Error ErrorThrownBy(const std::function<void()>& fn);

// Runs `op` once per entry of `grads`, feeding it as `grad_var`, on
// persistable `state` (var name -> initial value) kept across the runs, as
// a trainer runs an optimizer; returns the final state.
TensorMap RunSteps(const proto::OpDesc& op, const TensorMap& state,
                   const std::string& grad_var,
                   const std::vector<Tensor>& grads,
                   const Place& place = Place::CPU());

struct GradCheckOptions {
  double step = 1e-5;
  double tolerance = 1e-6;
  // Input vars to differentiate with respect to; empty: every float input.
  std::vector<std::string> wrt;
  // Output vars whose projection is differentiated; empty: every float
  // output.
  std::vector<std::string> of;
  uint64_t seed = 1234;
  // Elements whose input lies within kink_range of kink are skipped (the op
  // is not differentiable there, e.g. relu at 0).
  double kink = 0.0;
  double kink_range = -1.0;
  int threads = 1;
};

::testing::AssertionResult CheckGradient(const proto::OpDesc& op,
                                         const TensorMap& inputs,
                                         const GradCheckOptions& options = {});

}  // namespace testing
}  // namespace fluid
