// Layers: functions that append the ops of one network layer through a
// ProgramBuilder and return the name of the var holding the result. Each
// layer a front end builds by name is also registered, next to its function
// in layers.cc (REGISTER_LAYER, see layer_registry.h).
#pragma once

#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {

class LayerArgs;

namespace layers {

// The dtype named by the string argument `name` of a layer call
// ("float32", "float64", "int32", "int64"); any other is an error naming
// the layer and the argument.
DataType DtypeArg(const LayerArgs& a, const std::string& name);

// Declares a feed var. With append_batch_size, a leading -1 (batch) dim is
// added to `shape`. Data vars never receive gradients.
std::string Data(ProgramBuilder* b, const std::string& name, const Shape& shape,
                 DataType dtype = DataType::kFloat32,
                 bool append_batch_size = true);

// Fully connected: act(flatten(input, num_flatten_dims) * W + b). `act` is
// "" or one of KnownActivations(), with the op's default attributes. W is
// [in, size].
std::string Fc(ProgramBuilder* b, const std::string& input, int64_t size,
               const std::string& act = "", int num_flatten_dims = 1,
               const ParamAttr& weight = {}, const ParamAttr& bias = {},
               bool with_bias = true);
// Several inputs, as Fluid's fc takes them: each times its own weight
// (`weights[i]`, named <layer>.w_<i>), the products summed, then one bias.
std::string Fc(ProgramBuilder* b, const std::vector<std::string>& inputs,
               int64_t size, const std::string& act, int num_flatten_dims,
               const std::vector<ParamAttr>& weights, const ParamAttr& bias,
               bool with_bias);

// The window of conv2d: each of filter_size, stride, padding and dilation
// is [h, w] or one int for both.
struct Conv2dWindow {
  std::vector<int64_t> filter_size;
  std::vector<int64_t> stride = {1};
  std::vector<int64_t> padding = {0};
  std::vector<int64_t> dilation = {1};
  int64_t groups = 1;
};

// 2-D convolution over NCHW input [N, C, H, W], filter [num_filters,
// C / groups, kh, kw], plus a per-channel bias, then `act`.
std::string Conv2d(ProgramBuilder* b, const std::string& input,
                   int64_t num_filters, const Conv2dWindow& window,
                   const std::string& act = "", const ParamAttr& weight = {},
                   const ParamAttr& bias = {}, bool with_bias = true);
// A square window: filter_size x filter_size, one stride and padding.
std::string Conv2d(ProgramBuilder* b, const std::string& input,
                   int64_t num_filters, int filter_size, int stride = 1,
                   int padding = 0, const std::string& act = "",
                   const ParamAttr& weight = {}, const ParamAttr& bias = {},
                   bool with_bias = true);

// The window of pool2d: pool_size, pool_stride and pool_padding are [h, w]
// or one int for both; pool_size is ignored under global_pooling.
struct Pool2dWindow {
  std::vector<int64_t> pool_size = {-1};
  std::vector<int64_t> pool_stride = {1};
  std::vector<int64_t> pool_padding = {0};
  bool global_pooling = false;
  bool exclusive = true;
  bool ceil_mode = false;
};

// Max or average pooling over NCHW input.
std::string Pool2d(ProgramBuilder* b, const std::string& input,
                   const std::string& pool_type, const Pool2dWindow& window);
std::string Pool2d(ProgramBuilder* b, const std::string& input, int pool_size,
                   const std::string& pool_type = "max", int pool_stride = 1,
                   int pool_padding = 0, bool global_pooling = false);

// The activations a layer's `act` argument may name, sorted.
const std::vector<std::string>& KnownActivations();
// A kInvalidArgument error naming `layer` and its argument 'act' unless
// `act` is "" or a known activation. Layers taking `act` call it before
// appending anything.
void CheckActivation(const std::string& layer, const std::string& act);
// Appends the op `act` (default attributes) to `input`; "" appends nothing.
// `layer` names the caller in the error for an unknown `act`.
std::string Activation(ProgramBuilder* b, const std::string& input,
                       const std::string& act,
                       const std::string& layer = "activation");
std::string Relu(ProgramBuilder* b, const std::string& x);
std::string Sigmoid(ProgramBuilder* b, const std::string& x);
std::string Tanh(ProgramBuilder* b, const std::string& x);
// Softmax over dim `axis` (-1: the last); `name` prefixes the output.
std::string Softmax(ProgramBuilder* b, const std::string& x, int axis = -1,
                    const std::string& name = "");

// Activations with Fluid's attributes and defaults. A non-empty `name` is
// the prefix of the output var's name (default: the op type).
std::string LeakyRelu(ProgramBuilder* b, const std::string& x,
                      float alpha = 0.02f, const std::string& name = "");
std::string Elu(ProgramBuilder* b, const std::string& x, float alpha = 1.0f,
                const std::string& name = "");
std::string Relu6(ProgramBuilder* b, const std::string& x,
                  float threshold = 6.0f, const std::string& name = "");
std::string Exp(ProgramBuilder* b, const std::string& x,
                const std::string& name = "");
std::string Log(ProgramBuilder* b, const std::string& x,
                const std::string& name = "");
std::string Sqrt(ProgramBuilder* b, const std::string& x,
                 const std::string& name = "");
std::string Square(ProgramBuilder* b, const std::string& x,
                   const std::string& name = "");
std::string Abs(ProgramBuilder* b, const std::string& x,
                const std::string& name = "");
std::string Pow(ProgramBuilder* b, const std::string& x, float factor = 1.0f,
                const std::string& name = "");
std::string Softplus(ProgramBuilder* b, const std::string& x,
                     const std::string& name = "");
std::string Softsign(ProgramBuilder* b, const std::string& x,
                     const std::string& name = "");
std::string BRelu(ProgramBuilder* b, const std::string& x, float t_min = 0.0f,
                  float t_max = 24.0f, const std::string& name = "");

// Per-example loss [N, 1] of softmax + cross entropy on integer labels.
std::string SoftmaxWithCrossEntropy(ProgramBuilder* b,
                                    const std::string& logits,
                                    const std::string& label);
// Per-example loss [N, 1] of probabilities against integer labels (rows
// labelled ignore_index get 0), or with soft_label against probabilities.
std::string CrossEntropy(ProgramBuilder* b, const std::string& input,
                         const std::string& label, bool soft_label = false,
                         int ignore_index = -100);
std::string Mean(ProgramBuilder* b, const std::string& x);
// Top-k accuracy [1] of scores against integer labels; the counts go to
// `correct` and `total` when named (existing int64 vars).
std::string Accuracy(ProgramBuilder* b, const std::string& input,
                     const std::string& label, int k = 1,
                     const std::string& correct = "",
                     const std::string& total = "");
std::string Reshape(ProgramBuilder* b, const std::string& x,
                    const std::vector<int64_t>& shape);
// Out = type(x, y) (an elementwise binary op: elementwise_add, _sub, _mul,
// _div, _max, _min, _pow), y broadcast onto x from dim `axis`, then `act`;
// `name`, when given, is the prefix of the output's name.
std::string Elementwise(ProgramBuilder* b, const std::string& type,
                        const std::string& x, const std::string& y,
                        int axis = -1, const std::string& act = "",
                        const std::string& name = "");
std::string ElementwiseAdd(ProgramBuilder* b, const std::string& x,
                           const std::string& y, int axis = -1,
                           const std::string& act = "");
std::string ElementwiseMul(ProgramBuilder* b, const std::string& x,
                           const std::string& y, int axis = -1);
std::string Scale(ProgramBuilder* b, const std::string& x, float scale,
                  float bias = 0.0f, bool bias_after_scale = true,
                  const std::string& act = "", const std::string& name = "");
// A var of `shape` filled with `value` (fill_constant), marked
// stop_gradient.
std::string FillConstant(ProgramBuilder* b, const std::vector<int64_t>& shape,
                         DataType dtype, float value);

}  // namespace layers
}  // namespace fluid
