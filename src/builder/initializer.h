// Parameter initialisers. Each appends one op to the startup program that
// fills a parameter; random ones carry their own seed so that a job is
// reproducible from the builder's seed alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/framework/types.h"

namespace fluid {

class ProgramBuilder;

struct Initializer {
  enum class Kind {
    kConstant,
    kUniform,
    kGaussian,
    kXavierUniform,
    kXavierNormal,
    kKaimingUniform,
    kKaimingNormal,
    // PyTorch's default for Linear and Conv2d weights (kaiming_uniform with
    // a = sqrt(5)): U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
    kTorchDefault,
    // N(mean, std^2) truncated to mean +- 2 std (truncated_gaussian_random).
    kTruncatedGaussian,
    // The bilinear upsampling kernel in every [k, k] slice of a 4-D float32
    // weight [C_out, C_in, k, k] (assign_value), for conv2d_transpose.
    kBilinear,
  };
  Kind kind = Kind::kTorchDefault;
  float value = 0.0f;  // kConstant
  float low = -1.0f;   // kUniform
  float high = 1.0f;
  float mean = 0.0f;  // kGaussian, kTruncatedGaussian
  float std = 1.0f;
  uint64_t seed = 0;  // 0: drawn from the builder's seed sequence
  // Xavier and Kaiming (MSRA): fans to use instead of the weight's own
  // (Fluid's fan_in / fan_out arguments); 0 keeps the computed one.
  int64_t fan_in = 0;
  int64_t fan_out = 0;

  static Initializer Constant(float v) {
    Initializer i;
    i.kind = Kind::kConstant;
    i.value = v;
    return i;
  }
  static Initializer Uniform(float lo, float hi, uint64_t seed = 0) {
    Initializer i;
    i.kind = Kind::kUniform;
    i.low = lo;
    i.high = hi;
    i.seed = seed;
    return i;
  }
  static Initializer Gaussian(float mean, float std, uint64_t seed = 0) {
    Initializer i;
    i.kind = Kind::kGaussian;
    i.mean = mean;
    i.std = std;
    i.seed = seed;
    return i;
  }
  static Initializer Of(Kind kind, uint64_t seed = 0) {
    Initializer i;
    i.kind = kind;
    i.seed = seed;
    return i;
  }
};

// Fan-in and fan-out of a weight: [in, out] for fc weights, [out, in, kh, kw]
// for conv filters.
struct Fans {
  int64_t in = 1;
  int64_t out = 1;
};
Fans ComputeFans(const Shape& shape, bool is_conv_filter);

// Appends to the startup program the op that initialises `var` (declared
// there with `shape` and `dtype`).
void AppendInitOp(ProgramBuilder* builder, const std::string& var,
                  const Shape& shape, DataType dtype, const Initializer& init,
                  const Fans& fans);

// The values of the Bilinear initializer for a weight of `shape`: f =
// ceil(k / 2), c = (2 f - 1 - f % 2) / (2 f), and element (.., .., y, x) is
// (1 - |x / f - c|) (1 - |y / f - c|). `var` names the weight in errors
// (not 4-D, or kh != kw).
std::vector<float> BilinearValues(const std::string& var, const Shape& shape);

Initializer::Kind ParseInitializerKind(const std::string& name);

}  // namespace fluid
