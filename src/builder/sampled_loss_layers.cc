// The sampled-loss layers nce and hsigmoid (see sampled_loss_layers.h) and
// their registrations.
#include "src/builder/sampled_loss_layers.h"

#include <cmath>
#include <cstdlib>
#include <optional>

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

// D, the known width of `input` [N, D] (float32 or float64).
int64_t InputWidth(ProgramBuilder* b, const std::string& layer,
                   const std::string& input) {
  const proto::VarDesc& v = GetVarDesc(*b->main_block(), input);
  const Shape s = VarShape(v);
  FLUID_ENFORCE(s.rank() == 2 && s[1] > 0, "layer ", Quote(layer),
                ": argument 'input' ", Quote(input), " has shape ", s,
                "; it must be [N, D] with D known");
  const DataType dt = VarDtype(v);
  FLUID_ENFORCE(dt == DataType::kFloat32 || dt == DataType::kFloat64, "layer ",
                Quote(layer), ": argument 'input' ", Quote(input),
                " must be float32 or float64, is ", DataTypeName(dt));
  return s[1];
}

void CheckInt64(ProgramBuilder* b, const std::string& layer,
                const std::string& arg, const std::string& var) {
  const DataType dt = VarDtype(GetVarDesc(*b->main_block(), var));
  FLUID_ENFORCE(dt == DataType::kInt64, "layer ", Quote(layer), ": argument ",
                Quote(arg), " ", Quote(var), " must be int64, is ",
                DataTypeName(dt));
}

// The weight [rows, d] and, unless has_bias is false, the bias [rows, 1].
std::pair<std::string, std::string> CreateTables(
    ProgramBuilder* b, const std::string& layer, const std::string& prefix,
    int64_t rows, int64_t d, DataType dt, const ParamAttr& w_attr,
    bool has_bias, const ParamAttr& b_attr) {
  const Shape ws{rows, d};
  const std::string w = b->CreateParameter(
      Or(w_attr.name, prefix + ".w_0"), ws, dt,
      w_attr.WithDefaultInit(
          Initializer::Of(Initializer::Kind::kXavierUniform)),
      ComputeFans(ws, false), layer, "param_attr");
  if (!has_bias) return {w, ""};
  const Shape bs{rows, 1};
  const std::string bias =
      b->CreateParameter(Or(b_attr.name, prefix + ".b_0"), bs, dt,
                         b_attr.WithDefaultInit(Initializer::Constant(0.0f)),
                         ComputeFans(bs, false), layer, "bias_attr");
  return {w, bias};
}

// A constant var holding `values` (assign_value in the main program).
template <typename T>
std::string Constant(ProgramBuilder* b, const std::string& prefix,
                     const std::vector<T>& values, DataType dt,
                     const char* attr) {
  const std::string out = b->CreateTmpVar(prefix, dt);
  FindMutableVarDesc(b->main_block(), out)->set_stop_gradient(true);
  b->AppendOp(MakeOp(
      "assign_value", {}, {{"Out", {out}}},
      {{"shape", std::vector<int64_t>{static_cast<int64_t>(values.size())}},
       {"dtype", static_cast<int32_t>(dt)},
       {attr, values}}));
  return out;
}

// The alias tables of the distribution `p` (Vose's method): class c keeps
// its slot with probability keep[c], else gives it to alias[c] (-1: none).
void AliasTables(const std::vector<double>& p, std::vector<float>* keep,
                 std::vector<int32_t>* alias) {
  const size_t n = p.size();
  std::vector<double> q(n);
  std::vector<size_t> small, large;
  keep->assign(n, 1.0f);
  alias->assign(n, -1);
  for (size_t c = 0; c < n; ++c) {
    q[c] = p[c] * static_cast<double>(n);
    (q[c] < 1.0 ? small : large).push_back(c);
  }
  while (!small.empty() && !large.empty()) {
    const size_t s = small.back(), l = large.back();
    small.pop_back();
    (*keep)[s] = static_cast<float>(q[s]);
    (*alias)[s] = static_cast<int32_t>(l);
    q[l] -= 1.0 - q[s];
    if (q[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
}

// The three custom_dist inputs of the nce op.
std::vector<std::string> CustomDistTables(ProgramBuilder* b,
                                          const std::string& prefix,
                                          const std::vector<double>& dist,
                                          int64_t classes) {
  FLUID_ENFORCE(static_cast<int64_t>(dist.size()) == classes,
                "layer 'nce': argument 'custom_dist' holds ", dist.size(),
                " probabilities; it needs num_total_classes = ", classes);
  double total = 0;
  for (size_t c = 0; c < dist.size(); ++c) {
    FLUID_ENFORCE(dist[c] >= 0.0 && dist[c] <= 1.0,
                  "layer 'nce': argument 'custom_dist' holds ", dist[c], " at ",
                  c, "; probabilities lie in [0, 1]");
    total += dist[c];
  }
  FLUID_ENFORCE(std::fabs(total - 1.0) <= 1e-3,
                "layer 'nce': argument 'custom_dist' sums to ", total,
                "; it must be a distribution (sum 1)");
  std::vector<float> probs(dist.begin(), dist.end()), keep;
  std::vector<int32_t> alias;
  AliasTables(dist, &keep, &alias);
  return {Constant(b, prefix + ".custom_dist_probs", probs, DataType::kFloat32,
                   "fp32_values"),
          Constant(b, prefix + ".custom_dist_alias", alias, DataType::kInt32,
                   "int32_values"),
          Constant(b, prefix + ".custom_dist_alias_probs", keep,
                   DataType::kFloat32, "fp32_values")};
}

int32_t NceSamplerCode(const std::string& sampler) {
  if (sampler == "uniform") return 0;
  if (sampler == "log_uniform") return 1;
  FLUID_ENFORCE(sampler == "custom_dist",
                "layer 'nce': argument 'sampler' must be \"uniform\", "
                "\"log_uniform\" or \"custom_dist\", got ",
                Quote(sampler));
  return 2;
}

}  // namespace

std::string Nce(ProgramBuilder* b, const std::string& input,
                const std::string& label, int64_t num_total_classes,
                const NceOptions& o) {
  const int64_t d = InputWidth(b, "nce", input);
  CheckInt64(b, "nce", "label", label);
  FLUID_ENFORCE(num_total_classes >= 1 && num_total_classes <= INT32_MAX,
                "layer 'nce': argument 'num_total_classes' must be a positive "
                "int32, got ",
                num_total_classes);
  FLUID_ENFORCE(o.num_neg_samples >= 1 && o.num_neg_samples <= INT32_MAX,
                "layer 'nce': argument 'num_neg_samples' must be positive, "
                "got ",
                o.num_neg_samples);
  FLUID_ENFORCE(o.seed >= INT32_MIN && o.seed <= INT32_MAX,
                "layer 'nce': argument 'seed' ", o.seed,
                " does not fit in 32 bits");
  const int32_t sampler = NceSamplerCode(o.sampler);
  const DataType dt = VarDtype(GetVarDesc(*b->main_block(), input));
  const std::string layer = b->UniqueName(Or(o.name, "nce"));
  const auto tables = CreateTables(b, "nce", layer, num_total_classes, d, dt,
                                   o.param_attr, o.has_bias, o.bias_attr);
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"Input", {input}}, {"Label", {label}}, {"Weight", {tables.first}}};
  if (!tables.second.empty()) in.push_back({"Bias", {tables.second}});
  if (!o.sample_weight.empty())
    in.push_back({"SampleWeight", {o.sample_weight}});
  if (sampler == 2) {
    const auto t = CustomDistTables(b, layer, o.custom_dist, num_total_classes);
    in.push_back({"CustomDistProbs", {t[0]}});
    in.push_back({"CustomDistAlias", {t[1]}});
    in.push_back({"CustomDistAliasProbs", {t[2]}});
  }
  const std::string step =
      b->CreatePersistable(layer + ".step", Shape{1}, DataType::kInt64, 0.0f);
  in.push_back({"Step", {step}});
  const std::string cost = b->CreateTmpVar(layer + ".tmp", dt);
  const std::string logits = b->CreateTmpVar(layer + ".sample_logits", dt);
  const std::string labels =
      b->CreateTmpVar(layer + ".sample_labels", DataType::kInt64);
  FindMutableVarDesc(b->main_block(), labels)->set_stop_gradient(true);
  b->AppendOp(
      MakeOp("nce", in,
             {{"Cost", {cost}},
              {"SampleLogits", {logits}},
              {"SampleLabels", {labels}},
              {"StepOut", {step}}},
             {{"num_total_classes", static_cast<int32_t>(num_total_classes)},
              {"num_neg_samples", static_cast<int32_t>(o.num_neg_samples)},
              {"sampler", sampler},
              {"seed", static_cast<int32_t>(o.seed)},
              {"is_sparse", o.is_sparse}}));
  return Scale(b, cost, 1.0f / static_cast<float>(o.num_neg_samples + 1));
}

std::string Hsigmoid(ProgramBuilder* b, const std::string& input,
                     const std::string& label, int64_t num_classes,
                     const HsigmoidOptions& o) {
  const int64_t d = InputWidth(b, "hsigmoid", input);
  CheckInt64(b, "hsigmoid", "label", label);
  FLUID_ENFORCE(o.is_custom || (num_classes >= 2 && num_classes <= INT32_MAX),
                "layer 'hsigmoid': argument 'num_classes' must be at least 2 "
                "with the default tree, got ",
                num_classes);
  FLUID_ENFORCE(!o.is_custom || (num_classes >= 1 && num_classes <= INT32_MAX),
                "layer 'hsigmoid': argument 'num_classes' (the custom tree's "
                "inner nodes) must be positive, got ",
                num_classes);
  const bool paths = !o.path_table.empty() || !o.path_code.empty();
  FLUID_ENFORCE(o.is_custom || !paths,
                "layer 'hsigmoid': arguments 'path_table' and 'path_code' "
                "need is_custom=True; without it only num_classes is given");
  FLUID_ENFORCE(!o.is_custom || (!o.path_table.empty() && !o.path_code.empty()),
                "layer 'hsigmoid': is_custom=True needs both 'path_table' "
                "and 'path_code'");
  if (o.is_custom) {
    CheckInt64(b, "hsigmoid", "path_table", o.path_table);
    CheckInt64(b, "hsigmoid", "path_code", o.path_code);
  }
  const DataType dt = VarDtype(GetVarDesc(*b->main_block(), input));
  const std::string layer = b->UniqueName(Or(o.name, "hierarchical_sigmoid"));
  const int64_t rows = o.is_custom ? num_classes : num_classes - 1;
  const auto tables = CreateTables(b, "hsigmoid", layer, rows, d, dt,
                                   o.param_attr, o.has_bias, o.bias_attr);
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"X", {input}}, {"W", {tables.first}}, {"Label", {label}}};
  if (!tables.second.empty()) in.push_back({"Bias", {tables.second}});
  if (o.is_custom) {
    in.push_back({"PathTable", {o.path_table}});
    in.push_back({"PathCode", {o.path_code}});
  }
  const std::string out = b->CreateTmpVar(layer + ".tmp", dt);
  const std::string pre = b->CreateTmpVar(layer + ".pre_out", dt);
  b->AppendOp(MakeOp("hierarchical_sigmoid", in,
                     {{"Out", {out}}, {"PreOut", {pre}}},
                     {{"num_classes", static_cast<int32_t>(num_classes)},
                      {"is_sparse", o.is_sparse}}));
  return out;
}

namespace {

// The probabilities of custom_dist, as the Python layer passes them (the
// numbers separated by spaces).
std::vector<double> ParseDist(const std::string& text) {
  std::vector<double> p;
  const char* s = text.c_str();
  while (*s != '\0') {
    char* end = nullptr;
    p.push_back(std::strtod(s, &end));
    FLUID_ENFORCE(end != s && (*end == ' ' || *end == '\0'),
                  "layer 'nce': argument 'custom_dist': not a list of "
                  "numbers at ",
                  Quote(s, 20));
    s = *end == ' ' ? end + 1 : end;
  }
  return p;
}

}  // namespace

REGISTER_LAYER(nce)
    .Doc(
        "Noise-contrastive estimation cost [N, 1] of input [N, D] against "
        "int64 label [N, num_true] and num_neg_samples sampled classes; "
        "creates the weight [num_total_classes, D] and bias.")
    .Var("input")
    .Var("label")
    .Int("num_total_classes")
    .String("sample_weight", "")
    .Param("param_attr")
    .Param("bias_attr")
    .Int("num_neg_samples", 10)
    .String("name", "")
    .String("sampler", "uniform")
    .String("custom_dist", "")
    .Int("seed", 0)
    .Bool("is_sparse", false)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      NceOptions o;
      o.sample_weight = a.String("sample_weight");
      std::optional<ParamAttr> w = a.Param("param_attr");
      FLUID_ENFORCE(w.has_value(),
                    "layer 'nce': argument 'param_attr' cannot be false: the "
                    "layer needs its weight");
      o.param_attr = *w;
      std::optional<ParamAttr> bias = a.Param("bias_attr");
      o.has_bias = bias.has_value();
      if (bias) o.bias_attr = *bias;
      o.num_neg_samples = a.Int("num_neg_samples");
      o.name = a.String("name");
      o.sampler = a.String("sampler");
      o.custom_dist = ParseDist(a.String("custom_dist"));
      o.seed = a.Int("seed");
      o.is_sparse = a.Bool("is_sparse");
      return Nce(b, a.Var("input"), a.Var("label"), a.Int("num_total_classes"),
                 o);
    });

REGISTER_LAYER(hsigmoid)
    .Doc(
        "Hierarchical sigmoid loss [N, 1] of input [N, D] against int64 "
        "label over the default binary tree of num_classes leaves, or the "
        "custom tree of path_table and path_code (is_custom).")
    .Var("input")
    .Var("label")
    .Int("num_classes")
    .Param("param_attr")
    .Param("bias_attr")
    .String("name", "")
    .String("path_table", "")
    .String("path_code", "")
    .Bool("is_custom", false)
    .Bool("is_sparse", false)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      HsigmoidOptions o;
      std::optional<ParamAttr> w = a.Param("param_attr");
      FLUID_ENFORCE(w.has_value(),
                    "layer 'hsigmoid': argument 'param_attr' cannot be false: "
                    "the layer needs its weight");
      o.param_attr = *w;
      std::optional<ParamAttr> bias = a.Param("bias_attr");
      o.has_bias = bias.has_value();
      if (bias) o.bias_attr = *bias;
      o.name = a.String("name");
      o.path_table = a.String("path_table");
      o.path_code = a.String("path_code");
      o.is_custom = a.Bool("is_custom");
      o.is_sparse = a.Bool("is_sparse");
      return Hsigmoid(b, a.Var("input"), a.Var("label"), a.Int("num_classes"),
                      o);
    });

}  // namespace layers
}  // namespace fluid
