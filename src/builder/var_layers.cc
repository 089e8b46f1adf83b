// Layers that declare variables rather than compute: create_parameter (a
// parameter of any shape, for hand-written layers) and create_global_var (a
// constant-filled var, persistable or refilled every run).
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

// The parameter's attr: `attr` (named `name` when it has no name), with
// `fallback`'s initializer when it has none, else Fluid's default: zeros
// for a bias, Xavier (uniform) for a weight.
ParamAttr CreateParameterAttr(const LayerArgs& a) {
  std::optional<ParamAttr> given = a.Param("attr");
  FLUID_ENFORCE(given.has_value(),
                "layer 'create_parameter': argument "
                "'attr' cannot be false");
  ParamAttr attr = *given;
  if (attr.name.empty()) attr.name = a.String("name");
  if (attr.has_init) return attr;
  std::optional<ParamAttr> fallback = a.Param("default_initializer");
  if (fallback.has_value() && fallback->has_init) {
    attr.init = fallback->init;
  } else {
    attr.init = a.Bool("is_bias")
                    ? Initializer::Constant(0.0f)
                    : Initializer::Of(Initializer::Kind::kXavierUniform);
  }
  attr.has_init = true;
  return attr;
}

std::string CreateParameterLayer(ProgramBuilder* b, const LayerArgs& a) {
  const std::vector<int64_t>& shape = a.IntList("shape");
  CheckShape("create_parameter", shape);
  ParamAttr attr = CreateParameterAttr(a);
  if (attr.name.empty())
    attr.name = b->UniqueName("create_parameter") +
                (a.Bool("is_bias") ? ".b_0" : ".w_0");
  const Shape s(shape);
  return b->CreateParameter(attr.name, s, DtypeArg(a, "dtype"), attr,
                            ComputeFans(s, /*is_conv_filter=*/s.rank() == 4));
}

// Persistable: declared in both programs and filled once by the startup
// program, so it lives (and is saved) across runs. Otherwise a var of the
// main program that a fill_constant op there refills on every run.
std::string CreateGlobalVar(ProgramBuilder* b, const LayerArgs& a) {
  const std::vector<int64_t>& shape = a.IntList("shape");
  CheckShape("create_global_var", shape);
  const DataType dtype = DtypeArg(a, "dtype");
  const float value = static_cast<float>(a.Float("value"));
  std::string name = a.String("name");
  if (name.empty()) name = b->UniqueName("global_var") + ".tmp_0";
  if (a.Bool("persistable"))
    return b->CreatePersistable(name, Shape(shape), dtype, value);
  AddVarDesc(b->main_block(), name, dtype, Shape(shape))
      ->set_stop_gradient(true);
  b->AppendOp(MakeOp("fill_constant", {}, {{"Out", {name}}},
                     {{"shape", shape},
                      {"value", value},
                      {"dtype", static_cast<int32_t>(dtype)}}));
  return name;
}

}  // namespace

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
    .SetBuild(CreateParameterLayer);

REGISTER_LAYER(create_global_var)
    .Doc(
        "A var of the given shape and dtype filled with value: persistable "
        "(filled once, by the startup program) or refilled every run.")
    .IntList("shape")
    .Float("value")
    .String("dtype")
    .Bool("persistable", false)
    .Bool("force_cpu", false)
    .String("name", "")
    .SetBuild(CreateGlobalVar);

}  // namespace layers
}  // namespace fluid
