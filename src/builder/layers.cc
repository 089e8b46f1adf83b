#include "src/builder/layers.h"

#include <algorithm>
#include <cmath>

#include "src/builder/layer_registry.h"
#include "src/builder/tensor_layers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {

namespace {

const proto::VarDesc& Var(ProgramBuilder* b, const std::string& name) {
  return GetVarDesc(*b->main()->mutable_blocks(0), name);
}

// Appends a one-input, one-output op and returns its output, named after
// `name` when given and after the op otherwise.
std::string Unary(ProgramBuilder* b, const std::string& type,
                  const std::string& x, const AttributeMap& attrs = {},
                  const std::string& name = "") {
  std::string out =
      b->CreateTmpVar(name.empty() ? type : name, VarDtype(Var(b, x)));
  b->AppendOp(MakeOp(type, {{"X", {x}}}, {{"Out", {out}}}, attrs));
  return out;
}

std::string ParamName(ProgramBuilder* b, const ParamAttr& attr,
                      const std::string& layer, const char* suffix) {
  return attr.name.empty() ? layer + suffix : attr.name;
}

}  // namespace

std::string Data(ProgramBuilder* b, const std::string& name, const Shape& shape,
                 DataType dtype, bool append_batch_size) {
  Shape full;
  if (append_batch_size) full.push_back(-1);
  for (int64_t d : shape) full.push_back(d);
  proto::VarDesc* v = AddVarDesc(b->main_block(), name, dtype, full);
  v->set_stop_gradient(true);
  return name;
}

const std::vector<std::string>& KnownActivations() {
  static const std::vector<std::string> known = {
      "abs",      "brelu",    "elu",  "exp",    "gelu",    "leaky_relu",
      "log",      "pow",      "relu", "relu6",  "sigmoid", "softmax",
      "softplus", "softsign", "sqrt", "square", "tanh"};
  return known;
}

void CheckActivation(const std::string& layer, const std::string& act) {
  if (act.empty()) return;
  const std::vector<std::string>& known = KnownActivations();
  if (std::find(known.begin(), known.end(), act) != known.end()) return;
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  FLUID_THROW(ErrorCode::kInvalidArgument, "layer ", Quote(layer),
              ": argument 'act': unknown activation ", Quote(act),
              "; known: ", list);
}

std::string Activation(ProgramBuilder* b, const std::string& input,
                       const std::string& act, const std::string& layer) {
  CheckActivation(layer, act);
  if (act.empty()) return input;
  return Unary(b, act, input);
}

std::string Relu(ProgramBuilder* b, const std::string& x) {
  return Unary(b, "relu", x);
}
std::string Sigmoid(ProgramBuilder* b, const std::string& x) {
  return Unary(b, "sigmoid", x);
}
std::string Tanh(ProgramBuilder* b, const std::string& x) {
  return Unary(b, "tanh", x);
}
std::string Softmax(ProgramBuilder* b, const std::string& x, int axis,
                    const std::string& name) {
  // The default axis is left to the op's default.
  return Unary(b, "softmax", x,
               axis == -1 ? AttributeMap{} : AttributeMap{{"axis", axis}},
               name);
}

std::string LeakyRelu(ProgramBuilder* b, const std::string& x, float alpha,
                      const std::string& name) {
  return Unary(b, "leaky_relu", x, {{"alpha", alpha}}, name);
}
std::string Elu(ProgramBuilder* b, const std::string& x, float alpha,
                const std::string& name) {
  return Unary(b, "elu", x, {{"alpha", alpha}}, name);
}
std::string Relu6(ProgramBuilder* b, const std::string& x, float threshold,
                  const std::string& name) {
  return Unary(b, "relu6", x, {{"threshold", threshold}}, name);
}
std::string Exp(ProgramBuilder* b, const std::string& x,
                const std::string& name) {
  return Unary(b, "exp", x, {}, name);
}
std::string Log(ProgramBuilder* b, const std::string& x,
                const std::string& name) {
  return Unary(b, "log", x, {}, name);
}
std::string Sqrt(ProgramBuilder* b, const std::string& x,
                 const std::string& name) {
  return Unary(b, "sqrt", x, {}, name);
}
std::string Square(ProgramBuilder* b, const std::string& x,
                   const std::string& name) {
  return Unary(b, "square", x, {}, name);
}
std::string Abs(ProgramBuilder* b, const std::string& x,
                const std::string& name) {
  return Unary(b, "abs", x, {}, name);
}
std::string Pow(ProgramBuilder* b, const std::string& x, float factor,
                const std::string& name) {
  return Unary(b, "pow", x, {{"factor", factor}}, name);
}
std::string Softplus(ProgramBuilder* b, const std::string& x,
                     const std::string& name) {
  return Unary(b, "softplus", x, {}, name);
}
std::string Softsign(ProgramBuilder* b, const std::string& x,
                     const std::string& name) {
  return Unary(b, "softsign", x, {}, name);
}
std::string BRelu(ProgramBuilder* b, const std::string& x, float t_min,
                  float t_max, const std::string& name) {
  return Unary(b, "brelu", x, {{"t_min", t_min}, {"t_max", t_max}}, name);
}

namespace {

// input flattened at num_flatten_dims times a new (or shared) weight
// `w_name`: the projection of one input of fc. Adds its fan-in to *fan_in.
std::string FcProjection(ProgramBuilder* b, const std::string& layer,
                         const std::string& input, int64_t size,
                         int num_flatten_dims, const ParamAttr& weight,
                         const std::string& w_name, int64_t* fan_in) {
  const proto::VarDesc& in = Var(b, input);
  Shape in_shape = VarShape(in);
  DataType dtype = VarDtype(in);
  FLUID_ENFORCE(dtype == DataType::kFloat32 || dtype == DataType::kFloat64,
                "fc: input '", input, "' is ", DataTypeName(dtype),
                "; fc needs float32 or float64 input (integer ids need an "
                "embedding, or a cast to float)");
  FLUID_ENFORCE(num_flatten_dims >= 1 && num_flatten_dims < in_shape.rank(),
                "fc: num_flatten_dims ", num_flatten_dims,
                " out of range for input '", input, "' of shape ", in_shape);
  int64_t in_dim = in_shape.Product(num_flatten_dims, in_shape.rank());
  FLUID_ENFORCE(in_dim > 0, "fc: input '", input, "' of shape ", in_shape,
                " must have known feature dims");
  *fan_in += in_dim;
  Shape w_shape{in_dim, size};
  std::string w = b->CreateParameter(
      w_name, w_shape, dtype,
      weight.WithDefaultInit(Initializer::Of(Initializer::Kind::kTorchDefault)),
      ComputeFans(w_shape, false), "fc", "param_attr");
  std::string out = b->CreateTmpVar(layer + ".tmp", dtype);
  b->AppendOp(MakeOp("mul", {{"X", {input}}, {"Y", {w}}}, {{"Out", {out}}},
                     {{"x_num_col_dims", int32_t{num_flatten_dims}},
                      {"y_num_col_dims", int32_t{1}}}));
  return out;
}

}  // namespace

std::string Fc(ProgramBuilder* b, const std::vector<std::string>& inputs,
               int64_t size, const std::string& act, int num_flatten_dims,
               const std::vector<ParamAttr>& weights, const ParamAttr& bias,
               bool with_bias) {
  CheckActivation("fc", act);
  FLUID_ENFORCE(!inputs.empty(), "layer 'fc': argument 'input' is empty");
  FLUID_ENFORCE(weights.size() == inputs.size(),
                "layer 'fc': argument "
                "'param_attr' has ",
                weights.size(), " attrs for ", inputs.size(), " inputs");
  FLUID_ENFORCE(size > 0, "fc: size must be positive, got ", size);
  std::string layer = b->UniqueName("fc");
  int64_t fan_in = 0;
  std::vector<std::string> parts;
  for (size_t i = 0; i < inputs.size(); ++i)
    parts.push_back(FcProjection(
        b, layer, inputs[i], size, num_flatten_dims, weights[i],
        ParamName(b, weights[i], layer, (".w_" + std::to_string(i)).c_str()),
        &fan_in));
  DataType dtype = VarDtype(Var(b, inputs[0]));
  std::string out = parts[0];
  if (parts.size() > 1) {
    // Fluid's fc: the projections of the inputs summed, then one bias.
    out = b->CreateTmpVar(layer + ".tmp", dtype);
    b->AppendOp(MakeOp("sum", {{"X", parts}}, {{"Out", {out}}}));
  }
  if (with_bias) {
    float bound = static_cast<float>(1.0 / std::sqrt(double(fan_in)));
    std::string bname = b->CreateParameter(
        ParamName(b, bias, layer, ".b_0"), Shape{size}, dtype,
        bias.WithDefaultInit(Initializer::Uniform(-bound, bound)),
        ComputeFans(Shape{fan_in, size}, false), "fc", "bias_attr");
    out = ElementwiseAdd(b, out, bname, num_flatten_dims);
  }
  return Activation(b, out, act, "fc");
}

std::string Fc(ProgramBuilder* b, const std::string& input, int64_t size,
               const std::string& act, int num_flatten_dims,
               const ParamAttr& weight, const ParamAttr& bias, bool with_bias) {
  return Fc(b, std::vector<std::string>{input}, size, act, num_flatten_dims,
            {weight}, bias, with_bias);
}

namespace {

// [h, w] from one int or two, each at least `min`; errors name the layer
// and the argument.
std::vector<int32_t> Pair(const std::string& layer, const std::string& arg,
                          const std::vector<int64_t>& v, int64_t min) {
  FLUID_ENFORCE(v.size() == 1 || v.size() == 2, "layer ", Quote(layer),
                ": argument ", Quote(arg),
                " must be an int or two ints [h, w], got ", v.size(),
                " values");
  std::vector<int32_t> out;
  for (size_t i = 0; i < 2; ++i) {
    int64_t x = v[v.size() == 1 ? 0 : i];
    FLUID_ENFORCE(x >= min && x <= (int64_t{1} << 30), "layer ", Quote(layer),
                  ": argument ", Quote(arg), " must be at least ", min,
                  ", got ", x);
    out.push_back(static_cast<int32_t>(x));
  }
  return out;
}

}  // namespace

std::string Conv2d(ProgramBuilder* b, const std::string& input,
                   int64_t num_filters, const Conv2dWindow& window,
                   const std::string& act, const ParamAttr& weight,
                   const ParamAttr& bias, bool with_bias) {
  CheckActivation("conv2d", act);
  const proto::VarDesc& in = Var(b, input);
  Shape in_shape = VarShape(in);
  DataType dtype = VarDtype(in);
  FLUID_ENFORCE(in_shape.rank() == 4, "conv2d: input '", input,
                "' must be NCHW, its shape is ", in_shape);
  FLUID_ENFORCE(in_shape[1] > 0, "conv2d: input '", input,
                "' must have a known channel count, its shape is ", in_shape);
  const int64_t groups = window.groups;
  FLUID_ENFORCE(
      groups >= 1 && in_shape[1] % groups == 0 && num_filters % groups == 0,
      "layer 'conv2d': argument 'groups' = ", groups,
      " must divide both the input channels (", in_shape[1], ", input '", input,
      "') and num_filters (", num_filters, ")");
  std::vector<int32_t> k = Pair("conv2d", "filter_size", window.filter_size, 1);
  std::string layer = b->UniqueName("conv2d");
  Shape f_shape{num_filters, in_shape[1] / groups, k[0], k[1]};
  Fans fans = ComputeFans(f_shape, true);
  std::string w = b->CreateParameter(
      ParamName(b, weight, layer, ".w_0"), f_shape, dtype,
      weight.WithDefaultInit(Initializer::Of(Initializer::Kind::kTorchDefault)),
      fans, "conv2d", "param_attr");
  std::string out = b->CreateTmpVar(layer + ".tmp", dtype);
  b->AppendOp(MakeOp(
      "conv2d", {{"Input", {input}}, {"Filter", {w}}}, {{"Output", {out}}},
      {{"strides", Pair("conv2d", "stride", window.stride, 1)},
       {"paddings", Pair("conv2d", "padding", window.padding, 0)},
       {"dilations", Pair("conv2d", "dilation", window.dilation, 1)},
       {"groups", static_cast<int32_t>(groups)}}));
  if (with_bias) {
    float bound = static_cast<float>(1.0 / std::sqrt(double(fans.in)));
    std::string bname = b->CreateParameter(
        ParamName(b, bias, layer, ".b_0"), Shape{num_filters}, dtype,
        bias.WithDefaultInit(Initializer::Uniform(-bound, bound)), fans,
        "conv2d", "bias_attr");
    out = ElementwiseAdd(b, out, bname, 1);
  }
  return Activation(b, out, act, "conv2d");
}

std::string Conv2d(ProgramBuilder* b, const std::string& input,
                   int64_t num_filters, int filter_size, int stride,
                   int padding, const std::string& act, const ParamAttr& weight,
                   const ParamAttr& bias, bool with_bias) {
  Conv2dWindow window;
  window.filter_size = {filter_size};
  window.stride = {stride};
  window.padding = {padding};
  return Conv2d(b, input, num_filters, window, act, weight, bias, with_bias);
}

std::string Pool2d(ProgramBuilder* b, const std::string& input,
                   const std::string& pool_type, const Pool2dWindow& window) {
  FLUID_ENFORCE(pool_type == "max" || pool_type == "avg",
                "pool2d: pool_type must be 'max' or 'avg', got '", pool_type,
                "'");
  // Under global pooling the window is the image: pool_size is not read.
  std::vector<int32_t> size{1, 1};
  if (!window.global_pooling) {
    const std::vector<int64_t>& k = window.pool_size;
    FLUID_ENFORCE(std::find(k.begin(), k.end(), -1) == k.end(),
                  "layer 'pool2d': argument 'pool_size' must be given (an int "
                  "or [h, w]) unless global_pooling is true");
    size = Pair("pool2d", "pool_size", window.pool_size, 1);
  }
  AttributeMap attrs = {
      {"pooling_type", pool_type},
      {"ksize", size},
      {"strides", Pair("pool2d", "pool_stride", window.pool_stride, 1)},
      {"paddings", Pair("pool2d", "pool_padding", window.pool_padding, 0)},
      {"global_pooling", window.global_pooling}};
  // The op's default is exclusive; programs that keep it stay as they were.
  if (!window.exclusive) attrs["exclusive"] = false;
  if (window.ceil_mode) attrs["ceil_mode"] = true;
  std::string out = b->CreateTmpVar("pool2d", VarDtype(Var(b, input)));
  b->AppendOp(MakeOp("pool2d", {{"X", {input}}}, {{"Out", {out}}}, attrs));
  return out;
}

std::string Pool2d(ProgramBuilder* b, const std::string& input, int pool_size,
                   const std::string& pool_type, int pool_stride,
                   int pool_padding, bool global_pooling) {
  Pool2dWindow window;
  window.pool_size = {pool_size};
  window.pool_stride = {pool_stride};
  window.pool_padding = {pool_padding};
  window.global_pooling = global_pooling;
  return Pool2d(b, input, pool_type, window);
}

std::string SoftmaxWithCrossEntropy(ProgramBuilder* b,
                                    const std::string& logits,
                                    const std::string& label) {
  DataType dtype = VarDtype(Var(b, logits));
  std::string softmax = b->CreateTmpVar("softmax", dtype);
  std::string loss = b->CreateTmpVar("cross_entropy", dtype);
  b->AppendOp(MakeOp("softmax_with_cross_entropy",
                     {{"Logits", {logits}}, {"Label", {label}}},
                     {{"Softmax", {softmax}}, {"Loss", {loss}}}));
  return loss;
}

std::string CrossEntropy(ProgramBuilder* b, const std::string& input,
                         const std::string& label, bool soft_label,
                         int ignore_index) {
  std::string out = b->CreateTmpVar("cross_entropy", VarDtype(Var(b, input)));
  // Attrs at their defaults are left to the op, as programs built before
  // they existed have them.
  AttributeMap attrs;
  if (soft_label) attrs["soft_label"] = true;
  if (ignore_index != -100) attrs["ignore_index"] = int32_t{ignore_index};
  b->AppendOp(MakeOp("cross_entropy", {{"X", {input}}, {"Label", {label}}},
                     {{"Y", {out}}}, attrs));
  return out;
}

std::string Mean(ProgramBuilder* b, const std::string& x) {
  return Unary(b, "mean", x);
}

namespace {

// `given` when the caller named a var for the count, else a new one.
std::string CountVar(ProgramBuilder* b, const std::string& given,
                     const std::string& prefix, const std::string& arg) {
  if (given.empty()) return b->CreateTmpVar(prefix, DataType::kInt64);
  FLUID_ENFORCE(FindVarDesc(*b->main_block(), given) != nullptr,
                "layer 'accuracy': argument ", Quote(arg), ": no variable ",
                Quote(given), " in the program");
  return given;
}

}  // namespace

std::string Accuracy(ProgramBuilder* b, const std::string& input,
                     const std::string& label, int k,
                     const std::string& correct, const std::string& total) {
  FLUID_ENFORCE(k >= 1, "layer 'accuracy': argument 'k' must be positive, ",
                "got ", k);
  DataType dtype = VarDtype(Var(b, input));
  std::string acc = b->CreateTmpVar("accuracy", dtype);
  b->AppendOp(MakeOp(
      "accuracy", {{"Out", {input}}, {"Label", {label}}},
      {{"Accuracy", {acc}},
       {"Correct", {CountVar(b, correct, "accuracy_correct", "correct")}},
       {"Total", {CountVar(b, total, "accuracy_total", "total")}}},
      k == 1 ? AttributeMap{} : AttributeMap{{"k", k}}));
  return acc;
}

std::string Reshape(ProgramBuilder* b, const std::string& x,
                    const std::vector<int64_t>& shape) {
  return Unary(b, "reshape", x, {{"shape", shape}});
}

std::string Elementwise(ProgramBuilder* b, const std::string& type,
                        const std::string& x, const std::string& y, int axis,
                        const std::string& act, const std::string& name) {
  CheckActivation(type, act);
  std::string out =
      b->CreateTmpVar(name.empty() ? type : name, VarDtype(Var(b, x)));
  b->AppendOp(MakeOp(type, {{"X", {x}}, {"Y", {y}}}, {{"Out", {out}}},
                     {{"axis", int32_t{axis}}}));
  return Activation(b, out, act, type);
}

std::string ElementwiseAdd(ProgramBuilder* b, const std::string& x,
                           const std::string& y, int axis,
                           const std::string& act) {
  return Elementwise(b, "elementwise_add", x, y, axis, act);
}

std::string ElementwiseMul(ProgramBuilder* b, const std::string& x,
                           const std::string& y, int axis) {
  return Elementwise(b, "elementwise_mul", x, y, axis);
}

std::string Scale(ProgramBuilder* b, const std::string& x, float scale,
                  float bias, bool bias_after_scale, const std::string& act,
                  const std::string& name) {
  CheckActivation("scale", act);
  std::string out =
      b->CreateTmpVar(name.empty() ? "scale" : name, VarDtype(Var(b, x)));
  b->AppendOp(MakeOp("scale", {{"X", {x}}}, {{"Out", {out}}},
                     {{"scale", scale},
                      {"bias", bias},
                      {"bias_after_scale", bias_after_scale}}));
  return Activation(b, out, act, "scale");
}

std::string FillConstant(ProgramBuilder* b, const std::vector<int64_t>& shape,
                         DataType dtype, float value) {
  std::string out = b->UniqueName("fill_constant");
  // A constant: the autodiff sends no gradient to it.
  AddVarDesc(b->main_block(), out, dtype, Shape(shape))
      ->set_stop_gradient(true);
  b->AppendOp(MakeOp("fill_constant", {}, {{"Out", {out}}},
                     {{"shape", shape},
                      {"value", value},
                      {"dtype", static_cast<int32_t>(dtype)}}));
  return out;
}

// ---- registrations: each layer by name, with its arguments as Fluid names
// them (the Python functions of fluid.layers take the same, in this order).

DataType DtypeArg(const LayerArgs& a, const std::string& name) {
  const std::string& s = a.String(name);
  for (DataType t : {DataType::kFloat32, DataType::kFloat64, DataType::kInt32,
                     DataType::kInt64, DataType::kFloat16, DataType::kBFloat16,
                     DataType::kBool})
    if (s == DataTypeName(t)) return t;
  // Fluid's names for the 16-bit floats.
  if (s == "bf16" || s == "uint16") return DataType::kBFloat16;
  if (s == "fp16") return DataType::kFloat16;
  FLUID_THROW(ErrorCode::kInvalidArgument, "layer ", Quote(a.layer()),
              ": argument ", Quote(name), ": unknown dtype ", Quote(s),
              "; known: float32, float64, int32, int64, float16, bfloat16, "
              "bool");
}

namespace {

// The attr of a parameter the layer cannot go without (its weight).
ParamAttr WeightArg(const LayerArgs& a, const std::string& name) {
  std::optional<ParamAttr> attr = a.Param(name);
  FLUID_ENFORCE(attr.has_value(), "layer ", Quote(a.layer()), ": argument ",
                Quote(name),
                " cannot be false: the layer cannot go without "
                "this parameter");
  return *attr;
}

// Fluid's data_format of conv2d and pool2d: the ops compute on NCHW only.
void CheckNchw(const LayerArgs& a) {
  const std::string& f = a.String("data_format");
  FLUID_ENFORCE_CODE(f != "NHWC", ErrorCode::kUnimplemented, "layer ",
                     Quote(a.layer()),
                     ": argument 'data_format': NHWC is not supported (the "
                     "op computes on NCHW); transpose the input with "
                     "fluid.layers.transpose(x, perm=[0, 3, 1, 2]) and the "
                     "output back with perm=[0, 2, 3, 1]");
  FLUID_ENFORCE(f == "NCHW", "layer ", Quote(a.layer()),
                ": argument 'data_format': expected \"NCHW\" or \"NHWC\", "
                "got ",
                Quote(f));
}

// A one-input op with `name` (when not empty) prefixing its output.
std::string NamedUnary(ProgramBuilder* b, const std::string& type,
                       const LayerArgs& a) {
  return Unary(b, type, a.Var("x"), {}, a.String("name"));
}

// The permutation moving dim `axis` of a rank-`rank` tensor to the end, and
// its inverse.
std::vector<int64_t> AxisLastPerm(int rank, int axis) {
  std::vector<int64_t> perm;
  for (int d = 0; d < rank; ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  return perm;
}
std::vector<int64_t> InversePerm(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

// Fluid's softmax_with_cross_entropy with all its arguments. The op works
// on the last dim: another `axis` is moved there (logits and label) by a
// transpose, and the loss and softmax moved back. Returns [loss] or, with
// return_softmax, [loss, softmax]. numeric_stable_mode has no effect: the
// op always subtracts the row max.
std::vector<std::string> SoftmaxWithCrossEntropyLayer(ProgramBuilder* b,
                                                      const LayerArgs& a) {
  const std::string& logits = a.Var("logits");
  const Shape shape = VarShape(Var(b, logits));
  const int rank = shape.rank();
  int64_t axis = a.Int("axis");
  FLUID_ENFORCE(axis >= -rank && axis < rank,
                "layer 'softmax_with_cross_entropy': argument 'axis' = ", axis,
                " is out of range for logits ", Quote(logits), " of shape ",
                shape, "; expected an int in [", -rank, ", ", rank, ")");
  if (axis < 0) axis += rank;
  const bool moved = axis != rank - 1;
  std::vector<int64_t> perm;
  std::string x = logits, label = a.Var("label");
  if (moved) {
    perm = AxisLastPerm(rank, static_cast<int>(axis));
    x = Transpose(b, x, perm);
    label = Transpose(b, label, perm);
  }
  const DataType dtype = VarDtype(Var(b, logits));
  std::string softmax = b->CreateTmpVar("softmax", dtype);
  std::string loss = b->CreateTmpVar("cross_entropy", dtype);
  // Attrs at their defaults are left to the op, as programs built before
  // they existed have them.
  AttributeMap attrs;
  if (a.Bool("soft_label")) attrs["soft_label"] = true;
  const int ignore_index = a.Int32("ignore_index");
  if (ignore_index != -100) attrs["ignore_index"] = int32_t{ignore_index};
  b->AppendOp(MakeOp("softmax_with_cross_entropy",
                     {{"Logits", {x}}, {"Label", {label}}},
                     {{"Softmax", {softmax}}, {"Loss", {loss}}}, attrs));
  if (moved) {
    const std::vector<int64_t> back = InversePerm(perm);
    loss = Transpose(b, loss, back);
    softmax = Transpose(b, softmax, back);
  }
  if (a.Bool("return_softmax")) return {loss, softmax};
  return {loss};
}

// fill_constant, into `out` (an existing var) when given: Fluid's `out`.
std::string FillConstantLayer(ProgramBuilder* b, const LayerArgs& a) {
  const std::string& out = a.String("out");
  const DataType dtype = DtypeArg(a, "dtype");
  const float value = static_cast<float>(a.Float("value"));
  if (out.empty()) return FillConstant(b, a.IntList("shape"), dtype, value);
  proto::VarDesc* v = FindMutableVarDesc(b->main_block(), out);
  FLUID_ENFORCE_CODE(v != nullptr, ErrorCode::kNotFound,
                     "layer 'fill_constant': argument 'out': no variable ",
                     Quote(out), " in the program");
  // A constant: the autodiff sends no gradient to it (as Fluid marks it).
  v->set_stop_gradient(true);
  b->AppendOp(MakeOp("fill_constant", {}, {{"Out", {out}}},
                     {{"shape", a.IntList("shape")},
                      {"value", value},
                      {"dtype", static_cast<int32_t>(dtype)}}));
  return out;
}

}  // namespace

REGISTER_LAYER(data)
    .Doc(
        "Declares a feed var; a leading -1 (batch) dim is prepended with "
        "append_batch_size. stop_gradient=false lets the backward pass "
        "compute the var's gradient.")
    .String("name")
    .IntList("shape")
    .Bool("append_batch_size", true)
    .String("dtype", "float32")
    .Int("lod_level", 0)
    .String("type", "LOD_TENSOR")
    .Bool("stop_gradient", true)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      FLUID_ENFORCE_CODE(a.String("type") == "LOD_TENSOR",
                         ErrorCode::kUnimplemented,
                         "layer 'data': argument 'type': only LOD_TENSOR (a "
                         "dense tensor, or a LoD batch) is "
                         "fed here, got ",
                         Quote(a.String("type")));
      const std::string name =
          Data(b, a.String("name"), Shape(a.IntList("shape")),
               DtypeArg(a, "dtype"), a.Bool("append_batch_size"));
      // 1: a batch of variable-length sequences; 2 or more: sequences of
      // sequences (docs/python.md).
      const int64_t lod_level = a.Int("lod_level");
      FLUID_ENFORCE(lod_level >= 0 && lod_level <= 8,
                    "layer 'data': argument 'lod_level' is ", lod_level,
                    "; it must be 0 (dense), 1 (a batch of sequences) or "
                    "more (nested sequences, at most 8 levels)");
      proto::VarDesc* v = FindMutableVarDesc(b->main_block(), name);
      if (lod_level != 0) v->set_lod_level(static_cast<int32_t>(lod_level));
      if (!a.Bool("stop_gradient")) v->set_stop_gradient(false);
      return name;
    });

REGISTER_LAYER(fc)
    .Doc(
        "Fully connected: act(sum over inputs of flatten(input, "
        "num_flatten_dims) * W_i + b); input is a var or a list, param_attr "
        "one attr or one per input.")
    .VarList("input")
    .Int("size")
    .Int("num_flatten_dims", 1)
    .Param("param_attr")
    .Param("bias_attr")
    .String("act", "")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      std::optional<ParamAttr> bias = a.Param("bias_attr");
      const std::vector<std::string>& inputs = a.VarList("input");
      return Fc(b, inputs, a.Int("size"), a.String("act"),
                a.Int32("num_flatten_dims"),
                a.ParamList("param_attr", inputs.size()),
                bias.value_or(ParamAttr{}), bias.has_value());
    });

REGISTER_LAYER(conv2d)
    .Doc(
        "2-D convolution over NCHW input plus a per-channel bias, then act; "
        "filter_size, stride, padding and dilation are an int or [h, w]. "
        "use_cudnn and name are accepted and ignored; data_format NCHW "
        "only.")
    .Var("input")
    .Int("num_filters")
    .IntList("filter_size")
    .IntList("stride", {1})
    .IntList("padding", {0})
    .IntList("dilation", {1})
    .Int("groups", 1)
    .Param("param_attr")
    .Param("bias_attr")
    .Bool("use_cudnn", true)
    .String("act", "")
    .String("name", "")
    .String("data_format", "NCHW")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      CheckNchw(a);
      std::optional<ParamAttr> bias = a.Param("bias_attr");
      Conv2dWindow w;
      w.filter_size = a.IntList("filter_size");
      w.stride = a.IntList("stride");
      w.padding = a.IntList("padding");
      w.dilation = a.IntList("dilation");
      w.groups = a.Int("groups");
      return Conv2d(b, a.Var("input"), a.Int("num_filters"), w, a.String("act"),
                    WeightArg(a, "param_attr"), bias.value_or(ParamAttr{}),
                    bias.has_value());
    });

REGISTER_LAYER(pool2d)
    .Doc(
        "Max or average pooling over NCHW input; pool_size, pool_stride and "
        "pool_padding are an int or [h, w]. exclusive: an average leaves "
        "the padding out of its count; ceil_mode: output sizes rounded up. "
        "use_cudnn and name are accepted and ignored; data_format NCHW only.")
    .Var("input")
    .IntList("pool_size", {-1})
    .String("pool_type", "max")
    .IntList("pool_stride", {1})
    .IntList("pool_padding", {0})
    .Bool("global_pooling", false)
    .Bool("use_cudnn", true)
    .Bool("ceil_mode", false)
    .String("name", "")
    .Bool("exclusive", true)
    .String("data_format", "NCHW")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      CheckNchw(a);
      Pool2dWindow w;
      w.pool_size = a.IntList("pool_size");
      w.pool_stride = a.IntList("pool_stride");
      w.pool_padding = a.IntList("pool_padding");
      w.global_pooling = a.Bool("global_pooling");
      w.exclusive = a.Bool("exclusive");
      w.ceil_mode = a.Bool("ceil_mode");
      return Pool2d(b, a.Var("input"), a.String("pool_type"), w);
    });

REGISTER_LAYER(relu)
    .Doc("max(x, 0).")
    .Var("x")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return NamedUnary(b, "relu", a);
    });

REGISTER_LAYER(sigmoid)
    .Doc("1 / (1 + exp(-x)).")
    .Var("x")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return NamedUnary(b, "sigmoid", a);
    });

REGISTER_LAYER(tanh)
    .Doc("tanh(x).")
    .Var("x")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return NamedUnary(b, "tanh", a);
    });

REGISTER_LAYER(leaky_relu)
    .Doc("x where x > 0, else alpha * x.")
    .Var("x")
    .Float("alpha", 0.02)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return LeakyRelu(b, a.Var("x"), static_cast<float>(a.Float("alpha")),
                       a.String("name"));
    });

REGISTER_LAYER(elu)
    .Doc("x where x > 0, else alpha * (exp(x) - 1).")
    .Var("x")
    .Float("alpha", 1.0)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Elu(b, a.Var("x"), static_cast<float>(a.Float("alpha")),
                 a.String("name"));
    });

REGISTER_LAYER(relu6)
    .Doc("min(max(x, 0), threshold).")
    .Var("x")
    .Float("threshold", 6.0)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Relu6(b, a.Var("x"), static_cast<float>(a.Float("threshold")),
                   a.String("name"));
    });

REGISTER_LAYER(exp)
    .Doc("exp(x).")
    .Var("x")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Exp(b, a.Var("x"), a.String("name"));
    });

REGISTER_LAYER(log)
    .Doc("log(x).")
    .Var("x")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Log(b, a.Var("x"), a.String("name"));
    });

REGISTER_LAYER(sqrt)
    .Doc("sqrt(x).")
    .Var("x")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Sqrt(b, a.Var("x"), a.String("name"));
    });

REGISTER_LAYER(square)
    .Doc("x * x.")
    .Var("x")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Square(b, a.Var("x"), a.String("name"));
    });

REGISTER_LAYER(abs)
    .Doc("|x|.")
    .Var("x")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Abs(b, a.Var("x"), a.String("name"));
    });

REGISTER_LAYER(pow)
    .Doc("x^factor.")
    .Var("x")
    .Float("factor", 1.0)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Pow(b, a.Var("x"), static_cast<float>(a.Float("factor")),
                 a.String("name"));
    });

REGISTER_LAYER(softplus)
    .Doc("log(1 + exp(x)).")
    .Var("x")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Softplus(b, a.Var("x"), a.String("name"));
    });

REGISTER_LAYER(softsign)
    .Doc("x / (1 + |x|).")
    .Var("x")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Softsign(b, a.Var("x"), a.String("name"));
    });

REGISTER_LAYER(brelu)
    .Doc("min(max(x, t_min), t_max).")
    .Var("x")
    .Float("t_min", 0.0)
    .Float("t_max", 24.0)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return BRelu(b, a.Var("x"), static_cast<float>(a.Float("t_min")),
                   static_cast<float>(a.Float("t_max")), a.String("name"));
    });

REGISTER_LAYER(softmax)
    .Doc(
        "Softmax over dim axis (-1: the last). use_cudnn is accepted and "
        "ignored.")
    .Var("input")
    .Bool("use_cudnn", false)
    .String("name", "")
    .Int("axis", -1)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Softmax(b, a.Var("input"), a.Int32("axis"), a.String("name"));
    });

REGISTER_LAYER(softmax_with_cross_entropy)
    .Doc(
        "Per-example loss [N, 1] of softmax + cross entropy over dim axis, "
        "against int64 class ids or (soft_label) label probabilities; "
        "return_softmax: (loss, softmax). numeric_stable_mode is accepted "
        "and has no effect (always the max-subtracted form).")
    .Var("logits")
    .Var("label")
    .Bool("soft_label", false)
    .Int("ignore_index", -100)
    .Bool("numeric_stable_mode", true)
    .Bool("return_softmax", false)
    .Int("axis", -1)
    .SetBuild(SoftmaxWithCrossEntropyLayer);

REGISTER_LAYER(cross_entropy)
    .Doc(
        "Per-example loss [N, 1] of probabilities against integer labels, "
        "or against label probabilities with soft_label.")
    .Var("input")
    .Var("label")
    .Bool("soft_label", false)
    .Int("ignore_index", -100)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return CrossEntropy(b, a.Var("input"), a.Var("label"),
                          a.Bool("soft_label"), a.Int32("ignore_index"));
    });

REGISTER_LAYER(mean)
    .Doc("The mean of all elements, shape [1].")
    .Var("x")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return NamedUnary(b, "mean", a);
    });

REGISTER_LAYER(accuracy)
    .Doc(
        "Top-k accuracy [1] of scores against integer labels; the counts go "
        "to correct and total when given.")
    .Var("input")
    .Var("label")
    .Int("k", 1)
    .String("correct", "")
    .String("total", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Accuracy(b, a.Var("input"), a.Var("label"), a.Int32("k"),
                      a.String("correct"), a.String("total"));
    });

REGISTER_LAYER(reshape)
    .Doc(
        "-1 in shape is inferred, 0 copies the input dim; then act. inplace "
        "is accepted and has no effect (the output is a copy).")
    .Var("x")
    .IntList("shape")
    .String("actual_shape", "")
    .String("act", "")
    .Bool("inplace", false)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      FLUID_ENFORCE_CODE(a.String("actual_shape").empty(),
                         ErrorCode::kUnimplemented,
                         "layer 'reshape': argument 'actual_shape': a shape "
                         "given at run time is not supported; give 'shape' "
                         "with 0 (copy the dim) and -1 (infer it)");
      CheckActivation("reshape", a.String("act"));
      std::string out =
          Unary(b, "reshape", a.Var("x"), {{"shape", a.IntList("shape")}},
                a.String("name"));
      return Activation(b, out, a.String("act"), "reshape");
    });

REGISTER_LAYER(scale)
    .Doc("scale * x + bias (bias_after_scale) or scale * (x + bias), then act.")
    .Var("x")
    .Float("scale", 1.0)
    .Float("bias", 0.0)
    .Bool("bias_after_scale", true)
    .String("act", "")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Scale(b, a.Var("x"), static_cast<float>(a.Float("scale")),
                   static_cast<float>(a.Float("bias")),
                   a.Bool("bias_after_scale"), a.String("act"),
                   a.String("name"));
    });

REGISTER_LAYER(fill_constant)
    .Doc(
        "A tensor of the given shape and dtype filled with value, written "
        "to the var `out` when given; no gradient flows to it. force_cpu is "
        "accepted and has no effect (a var lives where the executor runs).")
    .IntList("shape")
    .String("dtype")
    .Float("value")
    .Bool("force_cpu", false)
    .String("out", "")
    .SetBuild(FillConstantLayer);

namespace {

// The elementwise layers share one signature: (x, y, axis=-1, act=None,
// name=None), `what` y broadcast from dim `axis` of x.
auto ElementwiseLayer(const std::string& what) {
  return [what](LayerSchema& s) {
    s.Doc(what + ", y broadcast from dim axis of x (-1: its trailing dims).")
        .Var("x")
        .Var("y")
        .Int("axis", -1)
        .String("act", "")
        .String("name", "")
        .SetBuild([type = s.type()](ProgramBuilder* b, const LayerArgs& a) {
          return Elementwise(b, type, a.Var("x"), a.Var("y"), a.Int32("axis"),
                             a.String("act"), a.String("name"));
        });
  };
}

}  // namespace

REGISTER_LAYER(elementwise_add).With(ElementwiseLayer("x + y"));

REGISTER_LAYER(elementwise_sub).With(ElementwiseLayer("x - y"));

REGISTER_LAYER(elementwise_mul).With(ElementwiseLayer("x * y"));

REGISTER_LAYER(elementwise_div).With(ElementwiseLayer("x / y"));

REGISTER_LAYER(elementwise_max).With(ElementwiseLayer("max(x, y)"));

REGISTER_LAYER(elementwise_min).With(ElementwiseLayer("min(x, y)"));

REGISTER_LAYER(elementwise_pow).With(ElementwiseLayer("x ^ y"));

}  // namespace layers
}  // namespace fluid
