#include "src/builder/norm_layers.h"

#include "src/builder/layer_registry.h"
#include "src/builder/layers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {

namespace {

const std::string& Or(const std::string& given, const std::string& fallback) {
  return given.empty() ? fallback : given;
}

// The input's shape, checked: [N, C] or NCHW with C known.
Shape BatchNormInputShape(ProgramBuilder* b, const std::string& input,
                          const BatchNormOptions& o) {
  Shape s = VarShape(GetVarDesc(*b->main_block(), input));
  FLUID_ENFORCE(s.rank() >= 2, "layer 'batch_norm': argument 'input': '", input,
                "' must be [N, C] or [N, C, H, W], its shape is ", s);
  FLUID_ENFORCE(s[1] > 0, "layer 'batch_norm': argument 'input': '", input,
                "' must have a known channel count, its shape is ", s);
  FLUID_ENFORCE(o.data_layout == "NCHW",
                "layer 'batch_norm': argument 'data_layout': only \"NCHW\" "
                "is supported, got \"",
                o.data_layout, "\"");
  return s;
}

}  // namespace

std::string BatchNorm(ProgramBuilder* b, const std::string& input,
                      const BatchNormOptions& o) {
  const Shape s = BatchNormInputShape(b, input, o);
  // fuse_with_relu: the op applies the relu itself, in the pass that
  // writes Y (a relu act on top would change nothing).
  const std::string act = o.fuse_with_relu && o.act == "relu" ? "" : o.act;
  CheckActivation("batch_norm", act);
  const DataType dtype = VarDtype(GetVarDesc(*b->main_block(), input));
  const std::string layer = b->UniqueName(Or(o.name, "batch_norm"));
  const Shape c{s[1]};
  const Fans fans = ComputeFans(c, false);
  const std::string scale = b->CreateParameter(
      Or(o.scale.name, layer + ".w_0"), c, dtype,
      o.scale.WithDefaultInit(Initializer::Constant(1.0f)), fans);
  const std::string bias = b->CreateParameter(
      Or(o.bias.name, layer + ".b_0"), c, dtype,
      o.bias.WithDefaultInit(Initializer::Constant(0.0f)), fans);
  const std::string mean = b->CreatePersistable(
      Or(o.moving_mean_name, layer + ".w_1"), c, dtype, 0.0f);
  const std::string var = b->CreatePersistable(
      Or(o.moving_variance_name, layer + ".w_2"), c, dtype, 1.0f);
  const std::string y = b->CreateTmpVar(layer + ".tmp", dtype);
  const std::string saved_mean = b->CreateTmpVar(layer + ".saved_mean", dtype);
  const std::string saved_var = b->CreateTmpVar(layer + ".saved_var", dtype);
  b->AppendOp(MakeOp("batch_norm",
                     {{"X", {input}},
                      {"Scale", {scale}},
                      {"Bias", {bias}},
                      {"Mean", {mean}},
                      {"Variance", {var}}},
                     {{"Y", {y}},
                      {"MeanOut", {mean}},
                      {"VarianceOut", {var}},
                      {"SavedMean", {saved_mean}},
                      {"SavedVariance", {saved_var}}},
                     {{"is_test", o.is_test},
                      {"momentum", o.momentum},
                      {"epsilon", o.epsilon},
                      {"data_layout", o.data_layout},
                      {"use_global_stats", o.use_global_stats},
                      {"sync_stats", o.sync_stats},
                      {"fuse_with_relu", o.fuse_with_relu}}));
  return Activation(b, y, act, "batch_norm");
}

std::string Dropout(ProgramBuilder* b, const std::string& x, float dropout_prob,
                    bool is_test, int seed, const std::string& name,
                    const std::string& implementation) {
  FLUID_ENFORCE(dropout_prob >= 0.0f && dropout_prob <= 1.0f,
                "layer 'dropout': argument 'dropout_prob': must be in [0, 1], "
                "got ",
                dropout_prob);
  FLUID_ENFORCE(implementation == "downgrade_in_infer" ||
                    implementation == "upscale_in_train",
                "layer 'dropout': argument 'dropout_implementation': must be "
                "\"downgrade_in_infer\" or \"upscale_in_train\", got \"",
                implementation, "\"");
  const DataType dtype = VarDtype(GetVarDesc(*b->main_block(), x));
  const std::string layer = b->UniqueName(Or(name, "dropout"));
  const std::string step =
      b->CreatePersistable(layer + ".step", Shape{1}, DataType::kInt64, 0.0f);
  const std::string out = b->CreateTmpVar(layer + ".tmp", dtype);
  const std::string mask = b->CreateTmpVar(layer + ".mask", dtype);
  b->AppendOp(MakeOp("dropout", {{"X", {x}}, {"Step", {step}}},
                     {{"Out", {out}}, {"Mask", {mask}}, {"StepOut", {step}}},
                     {{"dropout_prob", dropout_prob},
                      {"is_test", is_test},
                      {"seed", int32_t{seed}},
                      {"fix_seed", seed != 0},
                      {"dropout_implementation", implementation}}));
  return out;
}

namespace {

// A param-attr argument of batch_norm: both parameters are required.
ParamAttr RequiredParam(const LayerArgs& a, const std::string& name) {
  std::optional<ParamAttr> attr = a.Param(name);
  FLUID_ENFORCE(attr.has_value(), "layer ", Quote(a.layer()), ": argument ",
                Quote(name),
                " cannot be false: the layer cannot go without this "
                "parameter");
  return *attr;
}

BatchNormOptions BatchNormArgs(const LayerArgs& a) {
  BatchNormOptions o;
  o.act = a.String("act");
  o.is_test = a.Bool("is_test");
  o.momentum = static_cast<float>(a.Float("momentum"));
  o.epsilon = static_cast<float>(a.Float("epsilon"));
  o.scale = RequiredParam(a, "param_attr");
  o.bias = RequiredParam(a, "bias_attr");
  o.data_layout = a.String("data_layout");
  o.name = a.String("name");
  o.moving_mean_name = a.String("moving_mean_name");
  o.moving_variance_name = a.String("moving_variance_name");
  o.fuse_with_relu = a.Bool("fuse_with_relu");
  o.use_global_stats = a.Bool("use_global_stats");
  o.sync_stats = a.Bool("sync_stats");
  return o;
}

}  // namespace

REGISTER_LAYER(batch_norm)
    .Doc(
        "Per-channel batch normalisation of [N, C] or NCHW input, then act. "
        "in_place and do_model_average_for_mean_and_var are accepted and "
        "have no effect (Y is a new var: the gradient reads X).")
    .Var("input")
    .String("act", "")
    .Bool("is_test", false)
    .Float("momentum", 0.9)
    .Float("epsilon", 1e-5)
    .Param("param_attr")
    .Param("bias_attr")
    .String("data_layout", "NCHW")
    .Bool("in_place", false)
    .String("name", "")
    .String("moving_mean_name", "")
    .String("moving_variance_name", "")
    .Bool("do_model_average_for_mean_and_var", true)
    .Bool("use_global_stats", false)
    .Bool("fuse_with_relu", false)
    .Bool("sync_stats", false)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return BatchNorm(b, a.Var("input"), BatchNormArgs(a));
    });

REGISTER_LAYER(dropout)
    .Doc(
        "Zeroes elements with probability dropout_prob in training; "
        "inference scales (downgrade_in_infer) or passes through "
        "(upscale_in_train).")
    .Var("x")
    .Float("dropout_prob")
    .Bool("is_test", false)
    .Int("seed", 0)
    .String("name", "")
    .String("dropout_implementation", "downgrade_in_infer")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Dropout(b, a.Var("x"), static_cast<float>(a.Float("dropout_prob")),
                     a.Bool("is_test"), a.Int32("seed"), a.String("name"),
                     a.String("dropout_implementation"));
    });

}  // namespace layers
}  // namespace fluid
