#include "src/builder/initializer.h"

#include <cmath>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {

Fans ComputeFans(const Shape& shape, bool is_conv_filter) {
  Fans f;
  if (shape.rank() == 0) return f;
  if (is_conv_filter && shape.rank() >= 3) {
    int64_t receptive = shape.Product(2, shape.rank());
    f.in = shape[1] * receptive;
    f.out = shape[0] * receptive;
  } else if (shape.rank() == 1) {
    f.in = f.out = shape[0];
  } else {
    f.in = shape.Product(0, shape.rank() - 1);
    f.out = shape[shape.rank() - 1];
  }
  return f;
}

std::vector<float> BilinearValues(const std::string& var, const Shape& shape) {
  FLUID_ENFORCE(shape.rank() == 4, "Bilinear initializer of '", var,
                "': the weight must be 4-D [C_out, C_in, k, k], got ", shape);
  FLUID_ENFORCE(shape[2] == shape[3], "Bilinear initializer of '", var,
                "': the kernel must be square (shape[2] == shape[3]), got ",
                shape);
  const int64_t k = shape[3];
  const double f = std::ceil(static_cast<double>(k) / 2.0);
  const double c = (2.0 * f - 1.0 - std::fmod(f, 2.0)) / (2.0 * f);
  std::vector<float> kernel(static_cast<size_t>(k * k));
  for (int64_t y = 0; y < k; ++y)
    for (int64_t x = 0; x < k; ++x)
      kernel[static_cast<size_t>(y * k + x)] =
          static_cast<float>((1.0 - std::fabs(static_cast<double>(x) / f - c)) *
                             (1.0 - std::fabs(static_cast<double>(y) / f - c)));
  std::vector<float> values;
  values.reserve(static_cast<size_t>(shape.numel()));
  for (int64_t s = 0; s < shape[0] * shape[1]; ++s)
    values.insert(values.end(), kernel.begin(), kernel.end());
  return values;
}

namespace {

proto::OpDesc BilinearOp(const std::string& var, const Shape& shape,
                         DataType dtype) {
  FLUID_ENFORCE(dtype == DataType::kFloat32, "Bilinear initializer of '", var,
                "': only float32 weights are supported, got ",
                DataTypeName(dtype));
  return MakeOp("assign_value", {}, {{"Out", {var}}},
                {{"shape", shape.ToVector()},
                 {"dtype", static_cast<int32_t>(dtype)},
                 {"fp32_values", BilinearValues(var, shape)}});
}

}  // namespace

void AppendInitOp(ProgramBuilder* builder, const std::string& var,
                  const Shape& shape, DataType dtype, const Initializer& init,
                  const Fans& fans) {
  using Kind = Initializer::Kind;
  const int32_t dt = static_cast<int32_t>(dtype);
  const std::vector<int64_t> dims = shape.ToVector();
  auto seed = [&]() {
    return static_cast<int32_t>(init.seed != 0 ? init.seed
                                               : builder->NextSeed());
  };
  auto uniform = [&](float lo, float hi) {
    return MakeOp("uniform_random", {}, {{"Out", {var}}},
                  {{"shape", dims},
                   {"min", lo},
                   {"max", hi},
                   {"seed", seed()},
                   {"dtype", dt}});
  };
  auto gaussian = [&](float mean, float std) {
    return MakeOp("gaussian_random", {}, {{"Out", {var}}},
                  {{"shape", dims},
                   {"mean", mean},
                   {"std", std},
                   {"seed", seed()},
                   {"dtype", dt}});
  };
  const double fan_in =
      static_cast<double>(init.fan_in > 0 ? init.fan_in : fans.in);
  const double fan_out =
      static_cast<double>(init.fan_out > 0 ? init.fan_out : fans.out);
  const double fan_avg = (fan_in + fan_out) / 2.0;
  proto::OpDesc op;
  switch (init.kind) {
    case Kind::kConstant:
      op = MakeOp("fill_constant", {}, {{"Out", {var}}},
                  {{"shape", dims}, {"value", init.value}, {"dtype", dt}});
      break;
    case Kind::kUniform:
      op = uniform(init.low, init.high);
      break;
    case Kind::kGaussian:
      op = gaussian(init.mean, init.std);
      break;
    case Kind::kXavierUniform: {
      float limit = static_cast<float>(std::sqrt(3.0 / fan_avg));
      op = uniform(-limit, limit);
      break;
    }
    case Kind::kXavierNormal:
      op = gaussian(0.0f, static_cast<float>(std::sqrt(1.0 / fan_avg)));
      break;
    case Kind::kKaimingUniform: {
      float limit = static_cast<float>(std::sqrt(6.0 / fan_in));
      op = uniform(-limit, limit);
      break;
    }
    case Kind::kKaimingNormal:
      op = gaussian(0.0f, static_cast<float>(std::sqrt(2.0 / fan_in)));
      break;
    case Kind::kTruncatedGaussian:
      op = gaussian(init.mean, init.std);
      op.set_type("truncated_gaussian_random");
      break;
    case Kind::kBilinear:
      op = BilinearOp(var, shape, dtype);
      break;
    case Kind::kTorchDefault: {
      float limit = static_cast<float>(1.0 / std::sqrt(fan_in));
      op = uniform(-limit, limit);
      break;
    }
  }
  builder->AppendStartupOp(std::move(op));
}

Initializer::Kind ParseInitializerKind(const std::string& name) {
  using Kind = Initializer::Kind;
  if (name == "constant") return Kind::kConstant;
  if (name == "uniform") return Kind::kUniform;
  if (name == "gaussian" || name == "normal") return Kind::kGaussian;
  if (name == "xavier" || name == "xavier_uniform") return Kind::kXavierUniform;
  if (name == "xavier_normal") return Kind::kXavierNormal;
  if (name == "kaiming" || name == "kaiming_uniform")
    return Kind::kKaimingUniform;
  if (name == "kaiming_normal") return Kind::kKaimingNormal;
  if (name == "torch" || name == "default") return Kind::kTorchDefault;
  if (name == "truncated_gaussian" || name == "truncated_normal")
    return Kind::kTruncatedGaussian;
  if (name == "bilinear") return Kind::kBilinear;
  FLUID_THROW(ErrorCode::kInvalidArgument, "unknown initializer '", name,
              "'; known: constant, uniform, gaussian, xavier_uniform, "
              "xavier_normal, kaiming_uniform, kaiming_normal, torch, "
              "truncated_gaussian, bilinear");
}

}  // namespace fluid
