// What the tests of the 16-bit float kernels share: conversions between a
// float32 tensor and a bfloat16/float16 one, and the feeds of an op's
// generated grad ops on 16-bit values.
//
// A 16-bit kernel is checked against the float32 kernel on the same
// inputs: the float32 inputs are first rounded to the 16-bit type, and the
// float32 kernel is given those rounded values (exact in float32). Both then
// compute in float32, so the outputs differ by the 16-bit kernel's rounding
// of its results (see the tolerances in HalfTolerance) and by how the two
// kernels order their float32 arithmetic, which is far smaller.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace testing {

inline constexpr DataType kHalfTypes[] = {DataType::kBFloat16,
                                          DataType::kFloat16};

// Tolerance of a 16-bit result against the float32 one, relative to
// max(|a|, |b|, 1). One rounding to bfloat16 (8 significant bits) errs by at
// most 2^-8 relative and to float16 (11 bits) by 2^-11; where the float32
// kernels order their arithmetic differently, a value close to a rounding
// boundary may round to the neighbouring 16-bit value instead, one unit in
// the last place: 2^-7 (bfloat16) or 2^-10 (float16). So one unit in the
// last place is allowed, and no more.
inline double HalfTolerance(DataType dtype) {
  return dtype == DataType::kBFloat16 ? 1.0 / 128 : 1.0 / 1024;
}

// `t` (float32) rounded to `dtype` (bfloat16 or float16).
inline Tensor ToHalf(const Tensor& t, DataType dtype) {
  Tensor h;
  const float* src = t.data<float>();
  if (dtype == DataType::kBFloat16) {
    bfloat16* p = h.mutable_data<bfloat16>(t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = FromFloat<bfloat16>(src[i]);
  } else {
    float16* p = h.mutable_data<float16>(t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = FromFloat<float16>(src[i]);
  }
  return h;
}

// A 16-bit tensor as float32 (exact); any other tensor unchanged.
inline Tensor ToFloat32(const Tensor& t) {
  if (!IsHalfDtype(t.dtype())) return t;
  Tensor f;
  float* p = f.mutable_data<float>(t.shape());
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = t.dtype() == DataType::kBFloat16 ? ToFloat(t.data<bfloat16>()[i])
                                            : ToFloat(t.data<float16>()[i]);
  return f;
}

// float32 `t` rounded to `dtype` and back: the values a 16-bit tensor holds.
inline Tensor Rounded(const Tensor& t, DataType dtype) {
  return ToFloat32(ToHalf(t, dtype));
}

// `ref` (the float32 kernel's) and `got` (the 16-bit kernel's) agree within
// `tolerance` (relative to max(|a|, |b|, 1)), element by element.
inline ::testing::AssertionResult HalfClose(const Tensor& ref,
                                            const Tensor& got, double tolerance,
                                            const std::string& what) {
  if (ref.shape() != got.shape())
    return ::testing::AssertionFailure()
           << what << ": shape " << got.shape() << ", float32 kernel's "
           << ref.shape();
  const Tensor a = ToFloat32(ref), b = ToFloat32(got);
  if (a.dtype() != DataType::kFloat32 || b.dtype() != DataType::kFloat32)
    return ::testing::AssertionFailure()
           << what << ": dtype " << DataTypeName(got.dtype())
           << ", float32 kernel's " << DataTypeName(ref.dtype());
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    const double scale = std::max({std::fabs(x), std::fabs(y), 1.0});
    if (!(std::fabs(x - y) <= tolerance * scale))
      return ::testing::AssertionFailure()
             << what << "[" << i << "]: " << y << " vs float32 " << x
             << " (tolerance " << tolerance << " relative)";
  }
  return ::testing::AssertionSuccess();
}

// The inputs of one run of an op in 16 bits and of its float32 reference.
struct HalfFeeds {
  TensorMap half;  // float inputs as `dtype`, except those kept float32
  TensorMap ref;   // the same values, all float32
};

// Splits float32 `inputs` into the two runs' feeds; the inputs named in
// `keep` (e.g. batch_norm's Scale and statistics) stay float32 in both.
inline HalfFeeds MakeHalfFeeds(const TensorMap& inputs, DataType dtype,
                               const std::set<std::string>& keep = {}) {
  HalfFeeds f;
  for (const auto& kv : inputs) {
    if (kv.second.dtype() != DataType::kFloat32 || keep.count(kv.first)) {
      f.half[kv.first] = kv.second;
      f.ref[kv.first] = kv.second;
    } else {
      f.half[kv.first] = ToHalf(kv.second, dtype);
      f.ref[kv.first] = ToFloat32(f.half[kv.first]);
    }
  }
  return f;
}

// The feeds of `op`'s generated grad ops, given the forward feeds and the
// forward outputs of the 16-bit run: every forward value a grad op may read
// (the 16-bit run's, and its float32 image for the reference) and one
// random gradient per float forward output, in that output's dtype.
inline HalfFeeds GradFeeds(const HalfFeeds& fwd, const TensorMap& half_out,
                           uint64_t seed) {
  HalfFeeds g = fwd;
  for (const auto& kv : half_out) {
    g.half[kv.first] = kv.second;
    g.ref[kv.first] = ToFloat32(kv.second);
    const DataType dt = kv.second.dtype();
    if (!IsFloatDtype(dt)) continue;
    Tensor r = RandomTensor<float>(kv.second.shape(), -1, 1, seed++);
    const std::string name = GradVarName(kv.first);
    g.half[name] = IsHalfDtype(dt) ? ToHalf(r, dt) : r;
    g.ref[name] = ToFloat32(g.half[name]);
  }
  return g;
}

// `names` of `all` (the empty name skipped).
inline TensorMap Select(const TensorMap& all,
                        const std::vector<std::string>& names) {
  TensorMap m;
  for (const auto& n : names)
    if (n != kEmptyVarName && all.count(n)) m[n] = all.at(n);
  return m;
}

}  // namespace testing
}  // namespace fluid
