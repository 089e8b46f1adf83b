// uniform_random: Out ~ U[min, max); gaussian_random: Out ~ N(mean, std^2);
// truncated_gaussian_random: N(mean, std^2) conditioned on lying within two
// standard deviations of the mean (Fluid's TruncatedNormal initializer).
//
// Both are deterministic functions of (seed, shape, attrs): the bits come from
// std::mt19937_64, whose output the standard fixes, and the transforms to
// uniform and normal values are written here (53-bit mantissa fill, Box-Muller)
// rather than taken from <random>'s distributions, whose algorithms differ
// between standard libraries. So a job initialises the same parameters on
// every rank and every machine. A seed of 0 means "derive one from the output
// var's name": still deterministic, but distinct per parameter, so two
// unseeded ops of the same shape do not draw the same values. An op run twice
// with the same seed draws the same values again. The CUDA kernels
// (random_op.cu) draw with the same functions on the host and copy the values
// to the device, so both places initialise a parameter with the same bits.
#include <cmath>
#include <random>

#include "ops/op_helpers.h"
#include "ops/random_fill.h"
#include "src/framework/hash.h"

namespace fluid {
namespace ops {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

uint64_t SeedOf(const ExecutionContext& ctx) {
  int32_t seed = ctx.Attr<int32_t>("seed");
  if (seed != 0) return static_cast<uint32_t>(seed);
  return Fnv1a64(ctx.OutputName("Out"));
}

// Uniform in [0, 1) with 53 random bits.
inline double Uniform01(std::mt19937_64* rng) {
  return static_cast<double>((*rng)() >> 11) * 0x1.0p-53;
}

// Uniform in (0, 1]: safe to take the log of.
inline double UniformOpen0(std::mt19937_64* rng) {
  return static_cast<double>(((*rng)() >> 11) + 1) * 0x1.0p-53;
}

void RandomInferShape(InferShapeContext* ctx) {
  const auto& shape = ctx->Attr<std::vector<int64_t>>("shape");
  for (int64_t d : shape)
    FLUID_ENFORCE(d >= 0, ctx->op_type(), ": shape ", Shape(shape), " of '",
                  ctx->OutputName("Out"), "' must be fully known");
  DataType dtype = static_cast<DataType>(ctx->Attr<int32_t>("dtype"));
  FLUID_ENFORCE(dtype == DataType::kFloat32 || dtype == DataType::kFloat64,
                ctx->op_type(), ": dtype of '", ctx->OutputName("Out"),
                "' must be float32 or float64, is ", DataTypeName(dtype));
  ctx->SetOutputShape("Out", Shape(shape));
  ctx->SetOutputDtype("Out", dtype);
}

template <typename T>
void FillUniformImpl(const UniformParams& p, T* o, int64_t n) {
  const double lo = p.lo, hi = p.hi;
  std::mt19937_64 rng(p.seed);
  // Rounding to T may land on hi itself; keep the interval half-open.
  const T top = lo < hi ? std::nextafter(static_cast<T>(hi), static_cast<T>(lo))
                        : static_cast<T>(hi);
  for (int64_t i = 0; i < n; ++i) {
    T v = static_cast<T>(lo + (hi - lo) * Uniform01(&rng));
    o[i] = v > top ? top : v;
  }
}

template <typename T>
void FillGaussianImpl(const GaussianParams& p, T* o, int64_t n) {
  const double mean = p.mean, stddev = p.stddev;
  std::mt19937_64 rng(p.seed);
  // Box-Muller: each pair of uniforms gives two independent normals.
  for (int64_t i = 0; i < n; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(UniformOpen0(&rng)));
    const double theta = kTwoPi * Uniform01(&rng);
    o[i] = static_cast<T>(mean + stddev * r * std::cos(theta));
    if (i + 1 < n)
      o[i + 1] = static_cast<T>(mean + stddev * r * std::sin(theta));
  }
}

// Rejection: Box-Muller pairs, each normal kept when within kTruncation
// standard deviations (95.4% are), in the order drawn.
template <typename T>
void FillTruncatedGaussianImpl(const GaussianParams& p, T* o, int64_t n) {
  constexpr double kTruncation = 2.0;
  const double mean = p.mean, stddev = p.stddev;
  std::mt19937_64 rng(p.seed);
  int64_t i = 0;
  while (i < n) {
    const double r = std::sqrt(-2.0 * std::log(UniformOpen0(&rng)));
    const double theta = kTwoPi * Uniform01(&rng);
    const double z[2] = {r * std::cos(theta), r * std::sin(theta)};
    for (int k = 0; k < 2 && i < n; ++k)
      if (std::fabs(z[k]) <= kTruncation)
        o[i++] = static_cast<T>(mean + stddev * z[k]);
  }
}

template <typename T>
void UniformRandomKernel(const ExecutionContext& ctx) {
  const UniformParams p = GetUniformParams(ctx);
  Tensor* out = ctx.Output("Out");
  out->Resize(Shape(ctx.Attr<std::vector<int64_t>>("shape")));
  FillUniform(p, out->mutable_data<T>(), out->numel());
}

template <typename T>
void GaussianRandomKernel(const ExecutionContext& ctx) {
  const GaussianParams p = GetGaussianParams(ctx);
  Tensor* out = ctx.Output("Out");
  out->Resize(Shape(ctx.Attr<std::vector<int64_t>>("shape")));
  FillGaussian(p, out->mutable_data<T>(), out->numel());
}

template <typename T>
void TruncatedGaussianRandomKernel(const ExecutionContext& ctx) {
  const GaussianParams p = GetTruncatedGaussianParams(ctx);
  Tensor* out = ctx.Output("Out");
  out->Resize(Shape(ctx.Attr<std::vector<int64_t>>("shape")));
  FillTruncatedGaussian(p, out->mutable_data<T>(), out->numel());
}

}  // namespace

UniformParams GetUniformParams(const ExecutionContext& ctx) {
  UniformParams p;
  p.lo = ctx.Attr<float>("min");
  p.hi = ctx.Attr<float>("max");
  FLUID_ENFORCE(p.lo <= p.hi, "uniform_random: min ", p.lo, " exceeds max ",
                p.hi, " for '", ctx.OutputName("Out"), "'");
  p.seed = SeedOf(ctx);
  return p;
}

void FillUniform(const UniformParams& p, float* o, int64_t n) {
  FillUniformImpl(p, o, n);
}
void FillUniform(const UniformParams& p, double* o, int64_t n) {
  FillUniformImpl(p, o, n);
}

GaussianParams GetGaussianParams(const ExecutionContext& ctx) {
  GaussianParams p;
  p.mean = ctx.Attr<float>("mean");
  p.stddev = ctx.Attr<float>("std");
  FLUID_ENFORCE(p.stddev >= 0.0, ctx.type(), ": std ", p.stddev, " of '",
                ctx.OutputName("Out"), "' must not be negative");
  p.seed = SeedOf(ctx);
  return p;
}

GaussianParams GetTruncatedGaussianParams(const ExecutionContext& ctx) {
  return GetGaussianParams(ctx);
}

void FillGaussian(const GaussianParams& p, float* o, int64_t n) {
  FillGaussianImpl(p, o, n);
}
void FillGaussian(const GaussianParams& p, double* o, int64_t n) {
  FillGaussianImpl(p, o, n);
}

void FillTruncatedGaussian(const GaussianParams& p, float* o, int64_t n) {
  FillTruncatedGaussianImpl(p, o, n);
}
void FillTruncatedGaussian(const GaussianParams& p, double* o, int64_t n) {
  FillTruncatedGaussianImpl(p, o, n);
}

REGISTER_OP(uniform_random)
    .Doc("Fills Out with values drawn uniformly from [min, max).")
    .Output("Out")
    .Attr<std::vector<int64_t>>("shape", {}, "shape of Out")
    .Attr<float>("min", -1.0f, "lower bound (inclusive)")
    .Attr<float>("max", 1.0f, "upper bound (exclusive)")
    .Attr<int32_t>("seed", 0, "random seed; 0 derives one from Out's name")
    .Attr<int32_t>("dtype", static_cast<int32_t>(DataType::kFloat32),
                   "element type of Out (float32 or float64)")
    .SetInferShape(RandomInferShape)
    .CPUKernel<float>(UniformRandomKernel<float>)
    .CPUKernel<double>(UniformRandomKernel<double>);

REGISTER_OP(gaussian_random)
    .Doc("Fills Out with values drawn from N(mean, std^2).")
    .Output("Out")
    .Attr<std::vector<int64_t>>("shape", {}, "shape of Out")
    .Attr<float>("mean", 0.0f, "mean")
    .Attr<float>("std", 1.0f, "standard deviation")
    .Attr<int32_t>("seed", 0, "random seed; 0 derives one from Out's name")
    .Attr<int32_t>("dtype", static_cast<int32_t>(DataType::kFloat32),
                   "element type of Out (float32 or float64)")
    .SetInferShape(RandomInferShape)
    .CPUKernel<float>(GaussianRandomKernel<float>)
    .CPUKernel<double>(GaussianRandomKernel<double>);

REGISTER_OP(truncated_gaussian_random)
    .Doc(
        "Fills Out with values drawn from N(mean, std^2) truncated to "
        "[mean - 2 std, mean + 2 std] (values outside are redrawn).")
    .Output("Out")
    .Attr<std::vector<int64_t>>("shape", {}, "shape of Out")
    .Attr<float>("mean", 0.0f, "mean of the untruncated normal")
    .Attr<float>("std", 1.0f, "standard deviation of the untruncated normal")
    .Attr<int32_t>("seed", 0, "random seed; 0 derives one from Out's name")
    .Attr<int32_t>("dtype", static_cast<int32_t>(DataType::kFloat32),
                   "element type of Out (float32 or float64)")
    .SetInferShape(RandomInferShape)
    .CPUKernel<float>(TruncatedGaussianRandomKernel<float>)
    .CPUKernel<double>(TruncatedGaussianRandomKernel<double>);

}  // namespace ops
}  // namespace fluid
