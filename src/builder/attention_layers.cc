#include "src/builder/attention_layers.h"

#include "src/builder/initializer.h"
#include "src/builder/layer_registry.h"
#include "src/builder/layers.h"
#include "src/builder/tensor_layers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {

namespace {

const std::string& Or(const std::string& given, const std::string& fallback) {
  return given.empty() ? fallback : given;
}

// The number of normalised elements per row: the product of input's dims
// from begin_norm_axis on, which must be known (it sizes the parameters).
int64_t LayerNormCols(ProgramBuilder* b, const std::string& input, int axis) {
  const Shape s = VarShape(GetVarDesc(*b->main_block(), input));
  FLUID_ENFORCE(axis >= 0 && axis < s.rank(),
                "layer 'layer_norm': argument 'begin_norm_axis': ", axis,
                " must be in [0, ", s.rank(), ") for input '", input,
                "' of shape ", s);
  const int64_t cols = s.Product(axis, s.rank());
  FLUID_ENFORCE(cols > 0, "layer 'layer_norm': argument 'input': '", input,
                "' ", s, " must have known dims from begin_norm_axis=", axis,
                " on");
  return cols;
}

}  // namespace

std::string LayerNorm(ProgramBuilder* b, const std::string& input,
                      const LayerNormOptions& o) {
  CheckActivation("layer_norm", o.act);
  const int64_t cols = LayerNormCols(b, input, o.begin_norm_axis);
  const DataType dtype = VarDtype(GetVarDesc(*b->main_block(), input));
  const std::string layer = b->UniqueName(Or(o.name, "layer_norm"));
  const Shape c{cols};
  const Fans fans = ComputeFans(c, false);
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"X", {input}}};
  if (o.scale) {
    in.push_back({"Scale",
                  {b->CreateParameter(
                      Or(o.scale_attr.name, layer + ".w_0"), c, dtype,
                      o.scale_attr.WithDefaultInit(Initializer::Constant(1.0f)),
                      fans, "layer_norm", "param_attr")}});
  }
  if (o.shift) {
    in.push_back({"Bias",
                  {b->CreateParameter(
                      Or(o.bias_attr.name, layer + ".b_0"), c, dtype,
                      o.bias_attr.WithDefaultInit(Initializer::Constant(0.0f)),
                      fans, "layer_norm", "bias_attr")}});
  }
  const std::string y = b->CreateTmpVar(layer + ".tmp", dtype);
  const std::string mean = b->CreateTmpVar(layer + ".mean", dtype);
  const std::string var = b->CreateTmpVar(layer + ".variance", dtype);
  b->AppendOp(MakeOp("layer_norm", in,
                     {{"Y", {y}}, {"Mean", {mean}}, {"Variance", {var}}},
                     {{"epsilon", o.epsilon},
                      {"begin_norm_axis", int32_t{o.begin_norm_axis}}}));
  return Activation(b, y, o.act, "layer_norm");
}

std::string CausalAttentionMask(ProgramBuilder* b, int64_t seq_len,
                                DataType dtype, float masked_value) {
  FLUID_ENFORCE(seq_len > 0 && seq_len <= (int64_t{1} << 14),
                "layer 'causal_attention_mask': argument 'seq_len': must be "
                "in [1, 16384], got ",
                seq_len);
  FLUID_ENFORCE(dtype == DataType::kFloat32 || dtype == DataType::kFloat64,
                "layer 'causal_attention_mask': argument 'dtype': must be "
                "float32 or float64, got ",
                dtype);
  std::vector<float> values(static_cast<size_t>(seq_len * seq_len), 0.0f);
  for (int64_t i = 0; i < seq_len; ++i)
    for (int64_t j = i + 1; j < seq_len; ++j)
      values[i * seq_len + j] = masked_value;
  const std::string mask = b->UniqueName("causal_attention_mask");
  // A constant: the autodiff sends no gradient to it.
  AddVarDesc(b->main_block(), mask, DataType::kFloat32,
             Shape({seq_len, seq_len}))
      ->set_stop_gradient(true);
  b->AppendOp(MakeOp("assign_value", {}, {{"Out", {mask}}},
                     {{"shape", std::vector<int64_t>{seq_len, seq_len}},
                      {"dtype", static_cast<int32_t>(DataType::kFloat32)},
                      {"fp32_values", values}}));
  return dtype == DataType::kFloat32 ? mask : Cast(b, mask, dtype);
}

std::string FillConstantBatchSizeLike(ProgramBuilder* b,
                                      const std::string& input,
                                      const std::vector<int64_t>& shape,
                                      DataType dtype, float value,
                                      int input_dim_idx, int output_dim_idx) {
  const std::string out = b->UniqueName("fill_constant_batch_size_like");
  // A constant: the autodiff sends no gradient to it.
  AddVarDesc(b->main_block(), out, dtype, Shape())->set_stop_gradient(true);
  b->AppendOp(MakeOp("fill_constant_batch_size_like", {{"Input", {input}}},
                     {{"Out", {out}}},
                     {{"shape", shape},
                      {"dtype", static_cast<int32_t>(dtype)},
                      {"value", value},
                      {"input_dim_idx", int32_t{input_dim_idx}},
                      {"output_dim_idx", int32_t{output_dim_idx}}}));
  return out;
}

std::string Gelu(ProgramBuilder* b, const std::string& x, bool approximate,
                 const std::string& name) {
  const DataType dtype = VarDtype(GetVarDesc(*b->main_block(), x));
  const std::string out = b->CreateTmpVar(Or(name, "gelu"), dtype);
  b->AppendOp(MakeOp("gelu", {{"X", {x}}}, {{"Out", {out}}},
                     {{"approximate", approximate}}));
  return out;
}

namespace {

LayerNormOptions LayerNormArgs(const LayerArgs& a) {
  LayerNormOptions o;
  o.scale = a.Bool("scale");
  o.shift = a.Bool("shift");
  o.begin_norm_axis = a.Int32("begin_norm_axis");
  o.epsilon = static_cast<float>(a.Float("epsilon"));
  // false for an attr means "no such parameter", as scale/shift=False.
  std::optional<ParamAttr> scale = a.Param("param_attr");
  std::optional<ParamAttr> bias = a.Param("bias_attr");
  if (!scale) o.scale = false;
  if (!bias) o.shift = false;
  if (scale) o.scale_attr = *scale;
  if (bias) o.bias_attr = *bias;
  o.act = a.String("act");
  o.name = a.String("name");
  return o;
}

}  // namespace

REGISTER_LAYER(layer_norm)
    .Doc(
        "Normalises each row of input's [rows, cols] view (cols: the dims "
        "from begin_norm_axis on) to zero mean and unit variance, then "
        "scale (a [cols] parameter, 1 at first) and shift (0 at first), "
        "then act.")
    .Var("input")
    .Bool("scale", true)
    .Bool("shift", true)
    .Int("begin_norm_axis", 1)
    .Float("epsilon", 1e-5)
    .Param("param_attr")
    .Param("bias_attr")
    .String("act", "")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return LayerNorm(b, a.Var("input"), LayerNormArgs(a));
    });

REGISTER_LAYER(gelu)
    .Doc(
        "x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))); approximate: "
        "0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).")
    .Var("x")
    .Bool("approximate", false)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Gelu(b, a.Var("x"), a.Bool("approximate"));
    });

REGISTER_LAYER(fill_constant_batch_size_like)
    .Doc(
        "A constant of shape and dtype filled with value, its dim "
        "output_dim_idx taken from input's dim input_dim_idx at run time. "
        "force_cpu is accepted and ignored.")
    .Var("input")
    .IntList("shape")
    .String("dtype")
    .Float("value")
    .Int("input_dim_idx", 0)
    .Int("output_dim_idx", 0)
    .Bool("force_cpu", false)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return FillConstantBatchSizeLike(
          b, a.Var("input"), a.IntList("shape"), DtypeArg(a, "dtype"),
          static_cast<float>(a.Float("value")), a.Int32("input_dim_idx"),
          a.Int32("output_dim_idx"));
    });

REGISTER_LAYER(causal_attention_mask)
    .Doc(
        "The constant [seq_len, seq_len] additive mask of causal "
        "self-attention: 0 on and below the diagonal, masked_value above.")
    .Int("seq_len")
    .String("dtype", "float32")
    .Float("masked_value", -1e9)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return CausalAttentionMask(b, a.Int("seq_len"), DtypeArg(a, "dtype"),
                                 static_cast<float>(a.Float("masked_value")));
    });

}  // namespace layers
}  // namespace fluid
