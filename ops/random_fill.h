// The generators of uniform_random, gaussian_random and
// truncated_gaussian_random, filling host memory.
// The CPU kernels fill their output with them and the CUDA kernels fill a
// host buffer they then copy to the device, so a parameter starts with the
// same bits whichever place initialises it. They are defined once, in
// random_op.cc, so both kernels run the same compiled code (the CUDA sources
// are built with other host flags, e.g. without -march=native, which could
// change how the float arithmetic is contracted).
//
// Free of Eigen: the CUDA kernels include it.
#pragma once

#include <cstdint>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// uniform_random's attrs and seed.
struct UniformParams {
  double lo, hi;
  uint64_t seed;
};
// Reads and checks them (min <= max).
UniformParams GetUniformParams(const ExecutionContext& ctx);
// o[0, n) ~ U[lo, hi).
void FillUniform(const UniformParams& p, float* o, int64_t n);
void FillUniform(const UniformParams& p, double* o, int64_t n);

// gaussian_random's attrs and seed.
struct GaussianParams {
  double mean, stddev;
  uint64_t seed;
};
// Reads and checks them (std >= 0).
GaussianParams GetGaussianParams(const ExecutionContext& ctx);
// o[0, n) ~ N(mean, stddev^2).
void FillGaussian(const GaussianParams& p, float* o, int64_t n);
void FillGaussian(const GaussianParams& p, double* o, int64_t n);

// truncated_gaussian_random: the same attrs as gaussian_random.
GaussianParams GetTruncatedGaussianParams(const ExecutionContext& ctx);
// o[0, n) ~ N(mean, stddev^2) conditioned on |o - mean| <= 2 stddev.
void FillTruncatedGaussian(const GaussianParams& p, float* o, int64_t n);
void FillTruncatedGaussian(const GaussianParams& p, double* o, int64_t n);

}  // namespace ops
}  // namespace fluid
