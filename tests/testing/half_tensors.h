// 16-bit float tensors for the tests of the bfloat16 / float16 kernels:
// random ones, conversions to and from float32, and the feeds of an op's
// grad ops (gradient_checker's RandomTensor makes float32/64 only).
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "src/framework/float16.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace testing {

// Element i of a float32, bfloat16 or float16 tensor, as a float.
inline float FloatAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kBFloat16:
      return ToFloat(t.data<bfloat16>()[i]);
    case DataType::kFloat16:
      return ToFloat(t.data<float16>()[i]);
    default:
      return t.data<float>()[i];
  }
}

// `t` (float32, bfloat16 or float16) as `dtype`, rounded to nearest even;
// with abs, the magnitudes.
inline Tensor Converted(const Tensor& t, DataType dtype, bool abs = false) {
  Tensor out;
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    float v = FloatAt(t, i);
    if (abs) v = std::fabs(v);
    if (dtype == DataType::kBFloat16) {
      out.mutable_data<bfloat16>(t.shape())[i] = FromFloat<bfloat16>(v);
    } else if (dtype == DataType::kFloat16) {
      out.mutable_data<float16>(t.shape())[i] = FromFloat<float16>(v);
    } else {
      out.mutable_data<float>(t.shape())[i] = v;
    }
  }
  if (t.numel() == 0) {
    if (dtype == DataType::kBFloat16) out.mutable_data<bfloat16>(t.shape());
    if (dtype == DataType::kFloat16) out.mutable_data<float16>(t.shape());
    if (dtype == DataType::kFloat32) out.mutable_data<float>(t.shape());
  }
  return out;
}

// Uniform in [lo, hi), rounded to `dtype`.
inline Tensor RandomOf(DataType dtype, const Shape& shape, uint64_t seed,
                       double lo = -1, double hi = 1) {
  return Converted(RandomTensor<float>(shape, lo, hi, seed), dtype);
}

// The grad ops of `op` and what each reads: `inputs`, the forward op's
// `outputs`, and `out_grads` (var name -> gradient of that output).
struct GradRun {
  proto::OpDesc op;
  TensorMap feeds;
};

inline std::vector<GradRun> GradRuns(const proto::OpDesc& op,
                                     const TensorMap& inputs,
                                     const TensorMap& outputs,
                                     const TensorMap& out_grads) {
  TensorMap known = inputs;
  for (const auto& kv : outputs) known[kv.first] = kv.second;
  for (const auto& kv : out_grads) known[GradVarName(kv.first)] = kv.second;
  std::vector<GradRun> runs;
  for (const proto::OpDesc& g :
       OpRegistry::Global().Get(op.type()).grad_maker()(op)) {
    GradRun r{g, {}};
    for (const auto& name : OpInputNames(g)) {
      if (name == kEmptyVarName) continue;
      FLUID_ENFORCE(known.count(name) != 0, g.type(), " reads '", name,
                    "', which the test does not supply");
      r.feeds[name] = known.at(name);
    }
    runs.push_back(r);
  }
  return runs;
}

}  // namespace testing
}  // namespace fluid
