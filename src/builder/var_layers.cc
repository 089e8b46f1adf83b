#include "src/builder/var_layers.h"

#include <optional>

#include "src/builder/layer_registry.h"
#include "src/builder/layers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {

namespace {

void CheckShape(const std::string& layer, const std::vector<int64_t>& shape) {
  FLUID_ENFORCE(!shape.empty(), "layer '", layer,
                "': argument 'shape' must name at least one dim");
  for (int64_t d : shape)
    FLUID_ENFORCE(d > 0, "layer '", layer, "': argument 'shape' ", Shape(shape),
                  ": every dim must be positive");
}

}  // namespace

std::string CreateParameter(ProgramBuilder* b,
                            const std::vector<int64_t>& shape, DataType dtype,
                            const std::string& name, const ParamAttr& attr,
                            bool is_bias, const ParamAttr& fallback) {
  CheckShape("create_parameter", shape);
  ParamAttr a = attr;
  if (a.name.empty()) a.name = name;
  if (a.name.empty())
    a.name = b->UniqueName("create_parameter") + (is_bias ? ".b_0" : ".w_0");
  if (!a.has_init) {
    a.init = fallback.has_init ? fallback.init
             : is_bias         ? Initializer::Constant(0.0f)
                       : Initializer::Of(Initializer::Kind::kXavierUniform);
    a.has_init = true;
  }
  const Shape s(shape);
  return b->CreateParameter(a.name, s, dtype, a,
                            ComputeFans(s, /*is_conv_filter=*/s.rank() == 4));
}

std::string CreateGlobalVar(ProgramBuilder* b,
                            const std::vector<int64_t>& shape, float value,
                            DataType dtype, bool persistable,
                            const std::string& name) {
  CheckShape("create_global_var", shape);
  const std::string var =
      name.empty() ? b->UniqueName("global_var") + ".tmp_0" : name;
  if (persistable) return b->CreatePersistable(var, Shape(shape), dtype, value);
  AddVarDesc(b->main_block(), var, dtype, Shape(shape))
      ->set_stop_gradient(true);
  b->AppendOp(MakeOp("fill_constant", {}, {{"Out", {var}}},
                     {{"shape", shape},
                      {"value", value},
                      {"dtype", static_cast<int32_t>(dtype)}}));
  return var;
}

std::string CreateTensor(ProgramBuilder* b, DataType dtype,
                         const std::string& name, bool persistable) {
  FLUID_ENFORCE_CODE(!persistable, ErrorCode::kUnimplemented,
                     "layer 'create_tensor': persistable=True is not "
                     "supported: a variable kept across runs needs a starting "
                     "value; use create_global_var(shape, value, dtype, "
                     "persistable=True)");
  const std::string var = name.empty() ? b->UniqueName("create_tensor") : name;
  FLUID_ENFORCE(FindVarDesc(*b->main_block(), var) == nullptr,
                "layer 'create_tensor': argument 'name': a variable ",
                Quote(var), " exists already");
  AddVarDesc(b->main_block(), var, dtype, Shape{})->set_stop_gradient(true);
  return var;
}

REGISTER_LAYER(create_parameter)
    .Doc(
        "A parameter of the given shape and dtype, initialised in the "
        "startup program (attr's initializer, else default_initializer's, "
        "else zeros for a bias and Xavier for a weight).")
    .IntList("shape")
    .String("dtype")
    .String("name", "")
    .Param("attr")
    .Bool("is_bias", false)
    .Param("default_initializer")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      std::optional<ParamAttr> attr = a.Param("attr");
      FLUID_ENFORCE(attr.has_value(),
                    "layer 'create_parameter': argument 'attr' cannot be "
                    "false");
      return CreateParameter(
          b, a.IntList("shape"), DtypeArg(a, "dtype"), a.String("name"), *attr,
          a.Bool("is_bias"),
          a.Param("default_initializer").value_or(ParamAttr{}));
    });

REGISTER_LAYER(create_global_var)
    .Doc(
        "A var of the given shape and dtype filled with value: persistable "
        "(filled once, by the startup program) or refilled every run; "
        "force_cpu changes nothing (a var lives where the executor runs).")
    .IntList("shape")
    .Float("value")
    .String("dtype")
    .Bool("persistable", false)
    .Bool("force_cpu", false)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return CreateGlobalVar(
          b, a.IntList("shape"), static_cast<float>(a.Float("value")),
          DtypeArg(a, "dtype"), a.Bool("persistable"), a.String("name"));
    });

REGISTER_LAYER(create_tensor)
    .Doc(
        "A var of the given dtype with no value yet, written by a later op "
        "(accuracy's total, assign's output); not persistable.")
    .String("dtype")
    .String("name", "")
    .Bool("persistable", false)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return CreateTensor(b, DtypeArg(a, "dtype"), a.String("name"),
                          a.Bool("persistable"));
    });

}  // namespace layers
}  // namespace fluid
