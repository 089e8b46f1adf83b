#include "src/builder/creation_layers.h"

#include "src/builder/layer_registry.h"
#include "src/builder/layers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {

namespace {

// A new output var of `dtype` that takes no gradient (a constant or a draw);
// shape inference fills its shape.
std::string ConstantVar(ProgramBuilder* b, const std::string& prefix,
                        DataType dtype) {
  const std::string name = b->UniqueName(prefix);
  AddVarDesc(b->main_block(), name, dtype, Shape())->set_stop_gradient(true);
  return name;
}

void CheckFloat(const std::string& layer, DataType dtype) {
  FLUID_ENFORCE(dtype == DataType::kFloat32 || dtype == DataType::kFloat64,
                "layer '", layer, "': argument 'dtype': ", DataTypeName(dtype),
                " is not supported (float32 or float64)");
}

}  // namespace

std::string FillLike(ProgramBuilder* b, const std::string& x, float value,
                     const std::string& out) {
  const DataType dt = VarDtype(GetVarDesc(*b->main_block(), x));
  const char* layer = value == 0.0f ? "zeros_like" : "ones_like";
  std::string o = out;
  if (o.empty()) {
    o = ConstantVar(b, layer, dt);
  } else {
    proto::VarDesc* v = FindMutableVarDesc(b->main_block(), o);
    FLUID_ENFORCE_CODE(v != nullptr, ErrorCode::kNotFound, "layer '", layer,
                       "': argument 'out': no variable '", o,
                       "' in the program");
    v->set_stop_gradient(true);
  }
  b->AppendOp(MakeOp("fill_any_like", {{"X", {x}}}, {{"Out", {o}}},
                     {{"value", value}, {"dtype", static_cast<int32_t>(dt)}}));
  return o;
}

namespace {

AttributeMap RandomAttrs(const RandomFill& f) {
  AttributeMap attrs = {{"seed", int32_t{f.seed}},
                        {"dtype", static_cast<int32_t>(f.dtype)}};
  attrs[f.gaussian ? "mean" : "min"] = f.a;
  attrs[f.gaussian ? "std" : "max"] = f.b;
  return attrs;
}

void CheckRandom(const std::string& layer, const RandomFill& f) {
  CheckFloat(layer, f.dtype);
  if (f.gaussian) {
    FLUID_ENFORCE(f.b >= 0, "layer '", layer, "': argument 'std': ", f.b,
                  " must be >= 0");
  } else {
    FLUID_ENFORCE(f.a <= f.b, "layer '", layer, "': argument 'min': ", f.a,
                  " exceeds argument 'max': ", f.b);
  }
}

}  // namespace

std::string RandomTensor(ProgramBuilder* b, const std::vector<int64_t>& shape,
                         const RandomFill& fill) {
  const std::string op = fill.gaussian ? "gaussian_random" : "uniform_random";
  CheckRandom(op, fill);
  for (int64_t d : shape)
    FLUID_ENFORCE(d >= 0, "layer '", op, "': argument 'shape': ", Shape(shape),
                  " must be fully known (dims >= 0)");
  const std::string out = ConstantVar(b, op, fill.dtype);
  AttributeMap attrs = RandomAttrs(fill);
  attrs["shape"] = shape;
  proto::OpDesc desc = MakeOp(op, {}, {{"Out", {out}}});
  for (const auto& [name, value] : attrs) SetOpAttr(&desc, name, value);
  b->AppendOp(std::move(desc));
  return out;
}

std::string RandomBatchSizeLike(ProgramBuilder* b, const std::string& input,
                                const std::vector<int64_t>& shape,
                                int input_dim_idx, int output_dim_idx,
                                const RandomFill& fill) {
  const std::string op = fill.gaussian ? "gaussian_random_batch_size_like"
                                       : "uniform_random_batch_size_like";
  CheckRandom(op, fill);
  const std::string out = ConstantVar(b, op, fill.dtype);
  proto::OpDesc desc = MakeOp(op, {{"Input", {input}}}, {{"Out", {out}}});
  AttributeMap attrs = RandomAttrs(fill);
  attrs["shape"] = shape;
  attrs["input_dim_idx"] = int32_t{input_dim_idx};
  attrs["output_dim_idx"] = int32_t{output_dim_idx};
  for (const auto& [name, value] : attrs) SetOpAttr(&desc, name, value);
  b->AppendOp(std::move(desc));
  return out;
}

std::string Range(ProgramBuilder* b, double start, double end, double step,
                  DataType dtype) {
  FLUID_ENFORCE(!IsHalfDtype(dtype) && dtype != DataType::kBool,
                "layer 'range': argument 'dtype': ", DataTypeName(dtype),
                " is not supported (float32, float64, int32, int64)");
  const std::string out = ConstantVar(b, "range", dtype);
  b->AppendOp(MakeOp("range", {}, {{"Out", {out}}},
                     {{"start", start},
                      {"end", end},
                      {"step", step},
                      {"dtype", static_cast<int32_t>(dtype)}}));
  return out;
}

std::string Linspace(ProgramBuilder* b, double start, double stop, int64_t num,
                     DataType dtype) {
  CheckFloat("linspace", dtype);
  const std::string out = ConstantVar(b, "linspace", dtype);
  b->AppendOp(MakeOp("linspace", {}, {{"Out", {out}}},
                     {{"start", start},
                      {"stop", stop},
                      {"num", num},
                      {"dtype", static_cast<int32_t>(dtype)}}));
  return out;
}

std::string Eye(ProgramBuilder* b, int64_t num_rows, int64_t num_columns,
                const std::vector<int64_t>& batch_shape, DataType dtype) {
  const std::string out = ConstantVar(b, "eye", dtype);
  b->AppendOp(MakeOp("eye", {}, {{"Out", {out}}},
                     {{"num_rows", num_rows},
                      {"num_columns", num_columns},
                      {"batch_shape", batch_shape},
                      {"dtype", static_cast<int32_t>(dtype)}}));
  return out;
}

std::string Diag(ProgramBuilder* b, const std::string& diagonal) {
  const DataType dt = VarDtype(GetVarDesc(*b->main_block(), diagonal));
  const std::string out = ConstantVar(b, "diag", dt);
  b->AppendOp(MakeOp("diag", {{"Diagonal", {diagonal}}}, {{"Out", {out}}}));
  return out;
}

std::string FiniteTest(ProgramBuilder* b, const std::string& op,
                       const std::string& x) {
  const std::string out = ConstantVar(b, op, DataType::kBool);
  b->AppendOp(MakeOp(op, {{"X", {x}}}, {{"Out", {out}}}));
  return out;
}

namespace {

RandomFill RandomArgs(const LayerArgs& a, bool gaussian) {
  RandomFill f;
  f.gaussian = gaussian;
  f.a = static_cast<float>(a.Float(gaussian ? "mean" : "min"));
  f.b = static_cast<float>(a.Float(gaussian ? "std" : "max"));
  f.seed = a.Int32("seed");
  f.dtype = DtypeArg(a, "dtype");
  return f;
}

}  // namespace

// zeros and ones: fill_constant of 0 and 1 (force_cpu is accepted and has
// no effect: a var lives where the executor runs).
REGISTER_LAYER(zeros)
    .Doc("A constant of shape and dtype filled with 0; force_cpu is ignored.")
    .IntList("shape")
    .String("dtype")
    .Bool("force_cpu", false)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return FillConstant(b, a.IntList("shape"), DtypeArg(a, "dtype"), 0.0f);
    });

REGISTER_LAYER(ones)
    .Doc("A constant of shape and dtype filled with 1; force_cpu is ignored.")
    .IntList("shape")
    .String("dtype")
    .Bool("force_cpu", false)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return FillConstant(b, a.IntList("shape"), DtypeArg(a, "dtype"), 1.0f);
    });

REGISTER_LAYER(ones_like)
    .Doc("x's shape and dtype filled with 1; written to `out` when given.")
    .Var("x")
    .String("out", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return FillLike(b, a.Var("x"), 1.0f, a.String("out"));
    });

REGISTER_LAYER(zeros_like)
    .Doc("x's shape and dtype filled with 0; written to `out` when given.")
    .Var("x")
    .String("out", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return FillLike(b, a.Var("x"), 0.0f, a.String("out"));
    });

REGISTER_LAYER(uniform_random)
    .Doc(
        "Values drawn uniformly from [min, max); seed 0: see "
        "creation_layers.h.")
    .IntList("shape")
    .String("dtype", "float32")
    .Float("min", -1.0)
    .Float("max", 1.0)
    .Int("seed", 0)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return RandomTensor(b, a.IntList("shape"), RandomArgs(a, false));
    });

REGISTER_LAYER(gaussian_random)
    .Doc("Values drawn from N(mean, std^2); seed 0: see creation_layers.h.")
    .IntList("shape")
    .Float("mean", 0.0)
    .Float("std", 1.0)
    .Int("seed", 0)
    .String("dtype", "float32")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return RandomTensor(b, a.IntList("shape"), RandomArgs(a, true));
    });

REGISTER_LAYER(uniform_random_batch_size_like)
    .Doc("uniform_random of shape, its dim output_dim_idx input's batch size.")
    .Var("input")
    .IntList("shape")
    .String("dtype", "float32")
    .Int("input_dim_idx", 0)
    .Int("output_dim_idx", 0)
    .Float("min", -1.0)
    .Float("max", 1.0)
    .Int("seed", 0)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return RandomBatchSizeLike(
          b, a.Var("input"), a.IntList("shape"), a.Int32("input_dim_idx"),
          a.Int32("output_dim_idx"), RandomArgs(a, false));
    });

REGISTER_LAYER(gaussian_random_batch_size_like)
    .Doc("gaussian_random of shape, its dim output_dim_idx input's batch size.")
    .Var("input")
    .IntList("shape")
    .Int("input_dim_idx", 0)
    .Int("output_dim_idx", 0)
    .Float("mean", 0.0)
    .Float("std", 1.0)
    .Int("seed", 0)
    .String("dtype", "float32")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return RandomBatchSizeLike(
          b, a.Var("input"), a.IntList("shape"), a.Int32("input_dim_idx"),
          a.Int32("output_dim_idx"), RandomArgs(a, true));
    });

REGISTER_LAYER(range)
    .Doc("[start, start + step, ...) short of end, of dtype.")
    .Float("start")
    .Float("end")
    .Float("step")
    .String("dtype")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Range(b, a.Float("start"), a.Float("end"), a.Float("step"),
                   DtypeArg(a, "dtype"));
    });

REGISTER_LAYER(linspace)
    .Doc("num values evenly spaced from start to stop, both included.")
    .Float("start")
    .Float("stop")
    .Int("num")
    .String("dtype")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Linspace(b, a.Float("start"), a.Float("stop"), a.Int("num"),
                      DtypeArg(a, "dtype"));
    });

REGISTER_LAYER(eye)
    .Doc("batch_shape copies of the [num_rows, num_columns] identity.")
    .Int("num_rows")
    .Int("num_columns", -1)
    .IntList("batch_shape", {})
    .String("dtype", "float32")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Eye(b, a.Int("num_rows"), a.Int("num_columns"),
                 a.IntList("batch_shape"), DtypeArg(a, "dtype"));
    });

REGISTER_LAYER(diag)
    .Doc("The [n, n] matrix with diagonal [n] on its diagonal, 0 elsewhere.")
    .Var("diagonal")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Diag(b, a.Var("diagonal"));
    });

REGISTER_LAYER(has_inf)
    .Doc("bool [1]: whether any element of x is an infinity.")
    .Var("x")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return FiniteTest(b, "isinf", a.Var("x"));
    });

REGISTER_LAYER(has_nan)
    .Doc("bool [1]: whether any element of x is a NaN.")
    .Var("x")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return FiniteTest(b, "isnan", a.Var("x"));
    });

REGISTER_LAYER(isfinite)
    .Doc("bool [1]: whether every element of x is finite.")
    .Var("x")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return FiniteTest(b, "isfinite", a.Var("x"));
    });

}  // namespace layers
}  // namespace fluid
