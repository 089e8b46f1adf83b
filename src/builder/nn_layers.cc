#include "src/builder/nn_layers.h"

#include <utility>

#include "src/builder/initializer.h"
#include "src/builder/layer_registry.h"
#include "src/builder/layers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {

namespace {

const std::string& Or(const std::string& given, const std::string& fallback) {
  return given.empty() ? fallback : given;
}

Shape ShapeOf(ProgramBuilder* b, const std::string& var) {
  return VarShape(GetVarDesc(*b->main_block(), var));
}

DataType DtypeOf(ProgramBuilder* b, const std::string& var) {
  return VarDtype(GetVarDesc(*b->main_block(), var));
}

// The [1, C, 1, ...] or [1, dims 1..] shape of prelu's alpha for `mode`.
Shape PreluAlphaShape(const std::string& x, const Shape& s,
                      const std::string& mode) {
  FLUID_ENFORCE(mode == "all" || mode == "channel" || mode == "element",
                "layer 'prelu': argument 'mode': '", mode,
                "' must be 'all', 'channel' or 'element'");
  if (mode == "all") return Shape({1});
  FLUID_ENFORCE(s.rank() >= 2, "layer 'prelu': mode '", mode,
                "' needs x of rank >= 2 ([N, C, ...]); '", x, "' is ", s);
  Shape a({1});
  for (int i = 1; i < s.rank(); ++i) {
    const bool used = mode == "element" || i == 1;
    FLUID_ENFORCE(!used || s[i] > 0, "layer 'prelu': mode '", mode,
                  "' needs dim ", i, " of x '", x, "' ", s,
                  " known (it sizes alpha)");
    a.push_back(used ? s[i] : 1);
  }
  return a;
}

}  // namespace

std::string CosSim(ProgramBuilder* b, const std::string& x,
                   const std::string& y) {
  const DataType dt = DtypeOf(b, x);
  const std::string layer = b->UniqueName("cos_sim");
  const std::string out = b->CreateTmpVar(layer + ".tmp", dt);
  const std::string xn = b->CreateTmpVar(layer + ".xnorm", dt);
  const std::string yn = b->CreateTmpVar(layer + ".ynorm", dt);
  b->AppendOp(MakeOp("cos_sim", {{"X", {x}}, {"Y", {y}}},
                     {{"Out", {out}}, {"XNorm", {xn}}, {"YNorm", {yn}}}));
  return out;
}

std::string L2Normalize(ProgramBuilder* b, const std::string& x, int axis,
                        float epsilon, const std::string& name) {
  // Fluid normalises a rank-1 x along its only axis whatever axis says.
  if (ShapeOf(b, x).rank() == 1) axis = 0;
  const DataType dt = DtypeOf(b, x);
  const std::string layer = b->UniqueName(Or(name, "l2_normalize"));
  const std::string out = b->CreateTmpVar(layer + ".tmp", dt);
  const std::string norm = b->CreateTmpVar(layer + ".norm", dt);
  b->AppendOp(MakeOp("norm", {{"X", {x}}}, {{"Out", {out}}, {"Norm", {norm}}},
                     {{"axis", int32_t{axis}}, {"epsilon", epsilon}}));
  return out;
}

std::string Prelu(ProgramBuilder* b, const std::string& x,
                  const std::string& mode, const ParamAttr& alpha,
                  const std::string& name) {
  const Shape a_shape = PreluAlphaShape(x, ShapeOf(b, x), mode);
  const DataType dt = DtypeOf(b, x);
  const std::string layer = b->UniqueName(Or(name, "prelu"));
  const std::string a =
      b->CreateParameter(Or(alpha.name, layer + ".w_0"), a_shape, dt,
                         alpha.WithDefaultInit(Initializer::Constant(0.25f)),
                         ComputeFans(a_shape, false), "prelu", "param_attr");
  const std::string out = b->CreateTmpVar(layer + ".tmp", dt);
  b->AppendOp(MakeOp("prelu", {{"X", {x}}, {"Alpha", {a}}}, {{"Out", {out}}},
                     {{"mode", mode}}));
  return out;
}

std::string SmoothL1(ProgramBuilder* b, const std::string& x,
                     const std::string& y, const std::string& inside_weight,
                     const std::string& outside_weight, float sigma) {
  FLUID_ENFORCE(inside_weight.empty() == outside_weight.empty(),
                "layer 'smooth_l1': arguments 'inside_weight' and "
                "'outside_weight' are given together or not at all; only '",
                inside_weight.empty() ? "outside_weight" : "inside_weight",
                "' is given");
  FLUID_ENFORCE(sigma > 0, "layer 'smooth_l1': argument 'sigma': ", sigma,
                " must be > 0");
  const DataType dt = DtypeOf(b, x);
  const std::string layer = b->UniqueName("smooth_l1_loss");
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"X", {x}}, {"Y", {y}}};
  if (!inside_weight.empty()) {
    in.push_back({"InsideWeight", {inside_weight}});
    in.push_back({"OutsideWeight", {outside_weight}});
  }
  const std::string diff = b->CreateTmpVar(layer + ".diff", dt);
  const std::string out = b->CreateTmpVar(layer + ".tmp", dt);
  b->AppendOp(MakeOp("smooth_l1_loss", in, {{"Diff", {diff}}, {"Out", {out}}},
                     {{"sigma", sigma}}));
  return out;
}

std::string GroupNorm(ProgramBuilder* b, const std::string& input,
                      const GroupNormOptions& o) {
  CheckActivation("group_norm", o.act);
  FLUID_ENFORCE(o.data_layout == "NCHW" || o.data_layout == "NHWC",
                "layer 'group_norm': argument 'data_layout': '", o.data_layout,
                "' must be 'NCHW' or 'NHWC'");
  const Shape s = ShapeOf(b, input);
  FLUID_ENFORCE(s.rank() >= 2, "layer 'group_norm': argument 'input': '", input,
                "' ", s, " must have rank >= 2");
  const int64_t c = o.data_layout == "NCHW" ? s[1] : s[s.rank() - 1];
  FLUID_ENFORCE(c > 0, "layer 'group_norm': the channels of '", input, "' ", s,
                " (", o.data_layout, ") must be known");
  FLUID_ENFORCE(o.groups >= 1 && c % o.groups == 0,
                "layer 'group_norm': argument 'groups': ", o.groups,
                " must divide the ", c, " channels of '", input, "' ", s);
  const DataType dt = DtypeOf(b, input);
  const std::string layer = b->UniqueName(Or(o.name, "group_norm"));
  const Shape cs{c};
  const Fans fans = ComputeFans(cs, false);
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"X", {input}}};
  if (o.scale) {
    in.push_back({"Scale",
                  {b->CreateParameter(
                      Or(o.scale_attr.name, layer + ".w_0"), cs, dt,
                      o.scale_attr.WithDefaultInit(Initializer::Constant(1.0f)),
                      fans, "group_norm", "param_attr")}});
  }
  if (o.shift) {
    in.push_back({"Bias",
                  {b->CreateParameter(
                      Or(o.bias_attr.name, layer + ".b_0"), cs, dt,
                      o.bias_attr.WithDefaultInit(Initializer::Constant(0.0f)),
                      fans, "group_norm", "bias_attr")}});
  }
  const std::string y = b->CreateTmpVar(layer + ".tmp", dt);
  const std::string mean = b->CreateTmpVar(layer + ".mean", dt);
  const std::string var = b->CreateTmpVar(layer + ".variance", dt);
  b->AppendOp(MakeOp("group_norm", in,
                     {{"Y", {y}}, {"Mean", {mean}}, {"Variance", {var}}},
                     {{"epsilon", o.epsilon},
                      {"groups", int32_t{o.groups}},
                      {"data_layout", o.data_layout}}));
  return Activation(b, y, o.act, "group_norm");
}

namespace {

// An optional var argument: "" (not given) or a var of the program.
std::string OptionalVar(ProgramBuilder* b, const LayerArgs& a,
                        const std::string& name) {
  const std::string& v = a.String(name);
  FLUID_ENFORCE_CODE(v.empty() || FindVarDesc(*b->main_block(), v) != nullptr,
                     ErrorCode::kNotFound, "layer '", a.layer(),
                     "': argument '", name, "': no variable '", v,
                     "' in the program");
  return v;
}

GroupNormOptions GroupNormArgs(const LayerArgs& a) {
  GroupNormOptions o;
  o.groups = a.Int32("groups");
  o.epsilon = static_cast<float>(a.Float("epsilon"));
  // false for an attr means "no such parameter", as in Fluid.
  std::optional<ParamAttr> scale = a.Param("param_attr");
  std::optional<ParamAttr> bias = a.Param("bias_attr");
  o.scale = scale.has_value();
  o.shift = bias.has_value();
  if (scale) o.scale_attr = *scale;
  if (bias) o.bias_attr = *bias;
  o.act = a.String("act");
  o.data_layout = a.String("data_layout");
  o.name = a.String("name");
  return o;
}

}  // namespace

REGISTER_LAYER(cos_sim)
    .Doc(
        "The cosine similarity of each row of X with Y's row (or Y's one "
        "row): [N, 1].")
    .Var("X")
    .Var("Y")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return CosSim(b, a.Var("X"), a.Var("Y"));
    });

REGISTER_LAYER(l2_normalize)
    .Doc("x / sqrt(sum of x^2 along axis + epsilon).")
    .Var("x")
    .Int("axis")
    .Float("epsilon", 1e-12)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return L2Normalize(b, a.Var("x"), a.Int32("axis"),
                         static_cast<float>(a.Float("epsilon")),
                         a.String("name"));
    });

REGISTER_LAYER(prelu)
    .Doc(
        "x where x > 0, else alpha * x; alpha a parameter (0.25 at first), "
        "one for all, per channel or per element of an example (mode).")
    .Var("x")
    .String("mode")
    .Param("param_attr")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Prelu(b, a.Var("x"), a.String("mode"),
                   a.Param("param_attr").value_or(ParamAttr{}),
                   a.String("name"));
    });

REGISTER_LAYER(smooth_l1)
    .Doc(
        "Per row: the sum of outside_weight * SmoothL1(inside_weight * (x - "
        "y)), SmoothL1(d) = 0.5 (sigma d)^2 where |d| < 1 / sigma^2, else "
        "|d| - 0.5 / sigma^2: [N, 1].")
    .Var("x")
    .Var("y")
    .String("inside_weight", "")
    .String("outside_weight", "")
    .Float("sigma", 1.0)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return SmoothL1(b, a.Var("x"), a.Var("y"),
                      OptionalVar(b, a, "inside_weight"),
                      OptionalVar(b, a, "outside_weight"),
                      static_cast<float>(a.Float("sigma")));
    });

REGISTER_LAYER(group_norm)
    .Doc(
        "Each example's channels in groups, each group normalised to zero "
        "mean and unit variance, times a [C] scale, plus a [C] bias, then "
        "act.")
    .Var("input")
    .Int("groups")
    .Float("epsilon", 1e-5)
    .Param("param_attr")
    .Param("bias_attr")
    .String("act", "")
    .String("data_layout", "NCHW")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return GroupNorm(b, a.Var("input"), GroupNormArgs(a));
    });

}  // namespace layers
}  // namespace fluid
