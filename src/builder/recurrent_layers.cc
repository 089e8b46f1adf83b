// The recurrent layers over level-1 LoD batches (Fluid's dynamic_lstm,
// dynamic_gru, lstm_unit, gru_unit) and their registrations.
#include "src/builder/recurrent_layers.h"

#include <cmath>
#include <optional>

#include "src/builder/initializer.h"
#include "src/builder/layer_registry.h"
#include "src/builder/layers.h"
#include "src/builder/tensor_layers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {

namespace {

void CheckGateActivation(const std::string& layer, const std::string& arg,
                         const std::string& act) {
  for (const char* known : {"sigmoid", "tanh", "relu", "identity"})
    if (act == known) return;
  FLUID_THROW(ErrorCode::kInvalidArgument, "layer ", Quote(layer),
              ": argument ", Quote(arg), " is ", Quote(act),
              "; known: sigmoid, tanh, relu, identity");
}

// The width D of a recurrent layer over `input` [rows, gates * D], checked
// against `size` (gates * D, or D when `size_is_width`).
int64_t RecurrentWidth(ProgramBuilder* b, const std::string& layer,
                       const std::string& input, int64_t size, int gates,
                       bool size_is_width) {
  const Shape in = VarShape(GetVarDesc(*b->main_block(), input));
  const int64_t d = size_is_width ? size : size / gates;
  FLUID_ENFORCE(d > 0 && (size_is_width || size % gates == 0), "layer ",
                Quote(layer), ": argument 'size' is ", size,
                size_is_width ? "; it must be positive"
                              : "; it must be a positive multiple of ",
                size_is_width ? "" : std::to_string(gates));
  FLUID_ENFORCE(in.rank() == 2 && (in[1] < 0 || in[1] == gates * d), "layer ",
                Quote(layer), ": argument 'input' ", Quote(input),
                " has shape ", in, "; with size ", size, " it must be [rows, ",
                gates * d, "] (the projected gate input)");
  return d;
}

// The recurrent weight [D, gates * D] and the bias [1, bias_width] ("" when
// the layer goes without).
std::pair<std::string, std::string> RecurrentParams(
    ProgramBuilder* b, const std::string& layer_type, const std::string& layer,
    const RecurrentOptions& o, int64_t d, int gates, int64_t bias_width,
    DataType dtype) {
  const float bound = static_cast<float>(1.0 / std::sqrt(double(d)));
  const Shape w{d, gates * d};
  const std::string weight = b->CreateParameter(
      o.param.name.empty() ? layer + ".w_0" : o.param.name, w, dtype,
      o.param.WithDefaultInit(Initializer::Uniform(-bound, bound)),
      ComputeFans(w, false), layer_type, "param_attr");
  if (!o.with_bias) return {weight, ""};
  const std::string bias = b->CreateParameter(
      o.bias.name.empty() ? layer + ".b_0" : o.bias.name, Shape{1, bias_width},
      dtype, o.bias.WithDefaultInit(Initializer::Constant(0.0f)),
      ComputeFans(w, false), layer_type, "bias_attr");
  return {weight, bias};
}

// param_attr (which cannot be false) and bias_attr.
void ReadParamAttrs(const LayerArgs& a, RecurrentOptions* o) {
  std::optional<ParamAttr> param = a.Param("param_attr");
  FLUID_ENFORCE(param.has_value(), "layer ", Quote(a.layer()),
                ": argument 'param_attr' cannot be false: the layer cannot "
                "go without its weight");
  o->param = *param;
  std::optional<ParamAttr> bias = a.Param("bias_attr");
  o->with_bias = bias.has_value();
  if (bias) o->bias = *bias;
}

// Reads the arguments the layers over sequences share.
RecurrentOptions ReadRecurrent(const LayerArgs& a) {
  RecurrentOptions o;
  ReadParamAttrs(a, &o);
  o.is_reverse = a.Bool("is_reverse");
  o.gate_activation = a.String("gate_activation");
  o.candidate_activation = a.String("candidate_activation");
  o.h_0 = a.String("h_0");
  return o;
}

}  // namespace

std::vector<std::string> DynamicLstm(ProgramBuilder* b,
                                     const std::string& input, int64_t size,
                                     const DynamicLstmOptions& o) {
  const std::string type = "dynamic_lstm";
  FLUID_ENFORCE(o.with_bias,
                "layer 'dynamic_lstm': argument 'bias_attr' cannot be false: "
                "the lstm op needs its bias");
  CheckGateActivation(type, "gate_activation", o.gate_activation);
  CheckGateActivation(type, "cell_activation", o.cell_activation);
  CheckGateActivation(type, "candidate_activation", o.candidate_activation);
  const int64_t d = RecurrentWidth(b, type, input, size, 4, false);
  const DataType dtype = VarDtype(GetVarDesc(*b->main_block(), input));
  FLUID_ENFORCE(dtype == o.dtype, "layer 'dynamic_lstm': argument 'dtype' is ",
                DataTypeName(o.dtype), " but argument 'input' ", Quote(input),
                " is ", DataTypeName(dtype));
  const std::string layer = b->UniqueName(o.name.empty() ? "lstm" : o.name);
  const auto [w, bias] = RecurrentParams(b, type, layer, o, d, 4,
                                         (o.use_peepholes ? 7 : 4) * d, dtype);
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"Input", {input}}, {"Weight", {w}}, {"Bias", {bias}}};
  if (!o.h_0.empty()) in.push_back({"H0", {o.h_0}});
  if (!o.c_0.empty()) in.push_back({"C0", {o.c_0}});
  std::vector<std::string> out;
  for (const char* part : {".hidden", ".cell", ".gate", ".cell_pre_act"})
    out.push_back(b->CreateTmpVar(layer + part, dtype));
  b->AppendOp(MakeOp("lstm", in,
                     {{"Hidden", {out[0]}},
                      {"Cell", {out[1]}},
                      {"BatchGate", {out[2]}},
                      {"BatchCellPreAct", {out[3]}}},
                     {{"use_peepholes", o.use_peepholes},
                      {"is_reverse", o.is_reverse},
                      {"gate_activation", o.gate_activation},
                      {"cell_activation", o.cell_activation},
                      {"candidate_activation", o.candidate_activation}}));
  return {out[0], out[1]};
}

REGISTER_LAYER(dynamic_lstm)
    .Doc(
        "LSTM over each sequence of the projected gate input [rows, size] "
        "(size = 4D, Fluid's gate blocks {c~, i, f, o}); returns (hidden, "
        "cell), [rows, D].")
    .Var("input")
    .Int("size")
    .String("h_0", "")
    .String("c_0", "")
    .Param("param_attr")
    .Param("bias_attr")
    .Bool("use_peepholes", true)
    .Bool("is_reverse", false)
    .String("gate_activation", "sigmoid")
    .String("cell_activation", "tanh")
    .String("candidate_activation", "tanh")
    .String("dtype", "float32")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      DynamicLstmOptions o;
      static_cast<RecurrentOptions&>(o) = ReadRecurrent(a);
      o.c_0 = a.String("c_0");
      o.use_peepholes = a.Bool("use_peepholes");
      o.cell_activation = a.String("cell_activation");
      o.dtype = DtypeArg(a, "dtype");
      o.name = a.String("name");
      return DynamicLstm(b, a.Var("input"), a.Int("size"), o);
    });

std::string DynamicGru(ProgramBuilder* b, const std::string& input,
                       int64_t size, const DynamicGruOptions& o) {
  const std::string type = "dynamic_gru";
  CheckGateActivation(type, "gate_activation", o.gate_activation);
  CheckGateActivation(type, "candidate_activation", o.candidate_activation);
  const int64_t d = RecurrentWidth(b, type, input, size, 3, true);
  const DataType dtype = VarDtype(GetVarDesc(*b->main_block(), input));
  const std::string layer = b->UniqueName(o.name.empty() ? "gru" : o.name);
  const auto [w, bias] = RecurrentParams(b, type, layer, o, d, 3, 3 * d, dtype);
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"Input", {input}}, {"Weight", {w}}};
  if (!bias.empty()) in.push_back({"Bias", {bias}});
  if (!o.h_0.empty()) in.push_back({"H0", {o.h_0}});
  std::vector<std::string> out;
  for (const char* part :
       {".hidden", ".gate", ".reset_hidden_prev", ".batch_hidden"})
    out.push_back(b->CreateTmpVar(layer + part, dtype));
  b->AppendOp(MakeOp("gru", in,
                     {{"Hidden", {out[0]}},
                      {"BatchGate", {out[1]}},
                      {"BatchResetHiddenPrev", {out[2]}},
                      {"BatchHidden", {out[3]}}},
                     {{"is_reverse", o.is_reverse},
                      {"gate_activation", o.gate_activation},
                      {"activation", o.candidate_activation},
                      {"origin_mode", o.origin_mode}}));
  return out[0];
}

REGISTER_LAYER(dynamic_gru)
    .Doc(
        "GRU over each sequence of the projected gate input [rows, 3 * size] "
        "(Fluid's gate blocks {u, r, c}); returns hidden [rows, size].")
    .Var("input")
    .Int("size")
    .Param("param_attr")
    .Param("bias_attr")
    .Bool("is_reverse", false)
    .String("gate_activation", "sigmoid")
    .String("candidate_activation", "tanh")
    .String("h_0", "")
    .Bool("origin_mode", false)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      DynamicGruOptions o;
      static_cast<RecurrentOptions&>(o) = ReadRecurrent(a);
      o.origin_mode = a.Bool("origin_mode");
      return DynamicGru(b, a.Var("input"), a.Int("size"), o);
    });

std::vector<std::string> LstmUnit(ProgramBuilder* b, const std::string& x_t,
                                  const std::string& hidden_t_prev,
                                  const std::string& cell_t_prev,
                                  float forget_bias, const ParamAttr& param,
                                  const ParamAttr& bias, bool with_bias,
                                  const std::string& name) {
  const Shape c = VarShape(GetVarDesc(*b->main_block(), cell_t_prev));
  FLUID_ENFORCE(
      c.rank() == 2 && c[1] > 0, "layer 'lstm_unit': argument 'cell_t_prev' ",
      Quote(cell_t_prev), " has shape ", c, "; it must be [N, D] with D known");
  const std::string layer = b->UniqueName(name.empty() ? "lstm_unit" : name);
  const std::string joined = Concat(b, {x_t, hidden_t_prev}, 1);
  const std::string gates =
      Fc(b, joined, 4 * c[1], "", 1, param, bias, with_bias);
  const DataType dtype = VarDtype(GetVarDesc(*b->main_block(), cell_t_prev));
  const std::string cell = b->CreateTmpVar(layer + ".cell", dtype);
  const std::string hidden = b->CreateTmpVar(layer + ".hidden", dtype);
  b->AppendOp(MakeOp("lstm_unit", {{"X", {gates}}, {"C_prev", {cell_t_prev}}},
                     {{"C", {cell}}, {"H", {hidden}}},
                     {{"forget_bias", forget_bias}}));
  return {hidden, cell};
}

REGISTER_LAYER(lstm_unit)
    .Doc(
        "One LSTM step: fc([x_t, hidden_t_prev], 4D) as the gates {i, f, o, "
        "j}, forget_bias added to f; returns (hidden, cell).")
    .Var("x_t")
    .Var("hidden_t_prev")
    .Var("cell_t_prev")
    .Float("forget_bias", 0.0)
    .Param("param_attr")
    .Param("bias_attr")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      RecurrentOptions p;
      ReadParamAttrs(a, &p);
      return LstmUnit(b, a.Var("x_t"), a.Var("hidden_t_prev"),
                      a.Var("cell_t_prev"),
                      static_cast<float>(a.Float("forget_bias")), p.param,
                      p.bias, p.with_bias, a.String("name"));
    });

namespace {

int32_t FluidActivationNumber(const std::string& arg, const std::string& act) {
  const char* known[] = {"identity", "sigmoid", "tanh", "relu"};
  for (int32_t i = 0; i < 4; ++i)
    if (act == known[i]) return i;
  FLUID_THROW(ErrorCode::kInvalidArgument, "layer 'gru_unit': argument ",
              Quote(arg), " is ", Quote(act),
              "; known: identity, sigmoid, tanh, relu");
}

}  // namespace

std::vector<std::string> GruUnit(ProgramBuilder* b, const std::string& input,
                                 const std::string& hidden, int64_t size,
                                 const DynamicGruOptions& o) {
  const std::string type = "gru_unit";
  const int32_t act =
      FluidActivationNumber("activation", o.candidate_activation);
  const int32_t gate_act =
      FluidActivationNumber("gate_activation", o.gate_activation);
  const int64_t d = RecurrentWidth(b, type, input, size, 3, false);
  const DataType dtype = VarDtype(GetVarDesc(*b->main_block(), input));
  const std::string layer = b->UniqueName(o.name.empty() ? type : o.name);
  const auto [w, bias] = RecurrentParams(b, type, layer, o, d, 3, 3 * d, dtype);
  std::vector<std::pair<std::string, std::vector<std::string>>> in{
      {"Input", {input}}, {"HiddenPrev", {hidden}}, {"Weight", {w}}};
  if (!bias.empty()) in.push_back({"Bias", {bias}});
  std::vector<std::string> out;
  for (const char* part : {".hidden", ".reset_hidden_prev", ".gate"})
    out.push_back(b->CreateTmpVar(layer + part, dtype));
  b->AppendOp(MakeOp(
      "gru_unit", in,
      {{"Hidden", {out[0]}}, {"ResetHiddenPrev", {out[1]}}, {"Gate", {out[2]}}},
      {{"activation", act},
       {"gate_activation", gate_act},
       {"origin_mode", o.origin_mode}}));
  return out;
}

REGISTER_LAYER(gru_unit)
    .Doc(
        "One GRU step of the projected gate input [N, size] (size = 3D); "
        "returns (updated_hidden, reset_hidden_pre, gate).")
    .Var("input")
    .Var("hidden")
    .Int("size")
    .Param("param_attr")
    .Param("bias_attr")
    .String("activation", "tanh")
    .String("gate_activation", "sigmoid")
    .Bool("origin_mode", false)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      DynamicGruOptions o;
      ReadParamAttrs(a, &o);
      o.candidate_activation = a.String("activation");
      o.gate_activation = a.String("gate_activation");
      o.origin_mode = a.Bool("origin_mode");
      return GruUnit(b, a.Var("input"), a.Var("hidden"), a.Int("size"), o);
    });

}  // namespace layers
}  // namespace fluid
