// A 16-bit kernel (bfloat16, float16) on a place, CPU or CUDA, against the
// float32 CPU kernel on the same rounded inputs: the op's outputs, then
// each generated grad op's, fed the 16-bit run's forward values and the
// same random output gradients. Each output has its own tolerance (the
// caller states it per op, output and type, with the reason), relative to
// max(|a|, |b|, 1) as in HalfClose; a tolerance of 0 asks for equality.
// The checks of the CPU tests (tests/ops) and of their CUDA twins
// (tests/gpu) are the same code.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/half_checks.h"

namespace fluid {
namespace testing {

struct HalfVsFloat32 {
  // Input vars that stay float32 in the 16-bit run (state, bias).
  std::set<std::string> keep;
  // Output vars (forward or gradient) that are float32 in the 16-bit run.
  std::set<std::string> f32_outputs;
  // The tolerance of output `var` in type `dtype`.
  std::function<double(DataType dtype, const std::string& var)> tolerance;
  uint64_t seed = 77;  // of the output gradients
  int threads = 1;
};

// The outputs of the 16-bit run `got` against the float32 run `ref`, each
// of the dtype it should have.
inline void ExpectOutputsNear(const std::string& what, const TensorMap& ref,
                              const TensorMap& got, DataType dt,
                              const HalfVsFloat32& c) {
  for (const auto& kv : ref) {
    ASSERT_TRUE(got.count(kv.first)) << what << " lacks " << kv.first;
    const Tensor& g = got.at(kv.first);
    if (!IsFloatDtype(kv.second.dtype())) continue;
    const DataType want =
        c.f32_outputs.count(kv.first) ? DataType::kFloat32 : dt;
    EXPECT_EQ(g.dtype(), want)
        << what << " output " << kv.first << " is " << DataTypeName(g.dtype());
    EXPECT_TRUE(HalfClose(kv.second, g, c.tolerance(dt, kv.first),
                          what + " output '" + kv.first + "'"));
  }
}

// `op` on `inputs` (float32; rounded to each 16-bit type but for c.keep)
// on `place`, against the float32 CPU kernel on the rounded values; then
// each generated grad op likewise. `inputs` keep their LoD.
inline void ExpectHalfNearFloat32(const proto::OpDesc& op,
                                  const TensorMap& inputs,
                                  const HalfVsFloat32& c,
                                  const Place& place = Place::CPU()) {
  for (DataType dt : kHalfTypes) {
    const std::string what = op.type() + " " + DataTypeName(dt) + " on " +
                             (place.is_cpu() ? "the CPU" : "CUDA");
    HalfFeeds f = MakeHalfFeeds(inputs, dt, c.keep);
    for (const auto& kv : inputs) {
      f.half[kv.first].set_lod(kv.second.lod());
      f.ref[kv.first].set_lod(kv.second.lod());
    }
    const TensorMap got = RunOp(op, f.half, c.threads, place);
    ExpectOutputsNear(what, RunOp(op, f.ref, c.threads), got, dt, c);
    const OpSchema& schema = OpRegistry::Global().Get(op.type());
    if (!schema.has_grad()) continue;
    const HalfFeeds g = GradFeeds(f, got, c.seed);
    for (const proto::OpDesc& grad : schema.grad_maker()(op)) {
      const auto names = OpInputNames(grad);
      ExpectOutputsNear(what + " " + grad.type(),
                        RunOp(grad, Select(g.ref, names), c.threads),
                        RunOp(grad, Select(g.half, names), c.threads, place),
                        dt, c);
    }
  }
}

}  // namespace testing
}  // namespace fluid
