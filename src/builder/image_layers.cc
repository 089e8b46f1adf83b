// The layers of image_layers.h, each registered by name with its arguments
// as Fluid 1.x names them; the Python functions of fluid.layers
// (layers_image.py) take the same, in this order.
#include "src/builder/image_layers.h"

#include <cmath>
#include <string>
#include <vector>

#include "src/builder/layer_registry.h"
#include "src/builder/layers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {
namespace {

const proto::VarDesc& VarOf(ProgramBuilder* b, const std::string& name) {
  return GetVarDesc(*b->main_block(), name);
}

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
    const int64_t x = v[v.size() == 1 ? 0 : i];
    FLUID_ENFORCE(x >= min && x <= (int64_t{1} << 30), "layer ", Quote(layer),
                  ": argument ", Quote(arg), " must be at least ", min,
                  ", got ", x);
    out.push_back(static_cast<int32_t>(x));
  }
  return out;
}

// The filter size Fluid derives from output_size when filter_size is not
// given: the kernel whose smallest output is output_size.
std::vector<int32_t> FilterFromOutput(const std::string& input, const Shape& in,
                                      const std::vector<int32_t>& out,
                                      const std::vector<int32_t>& stride,
                                      const std::vector<int32_t>& pad,
                                      const std::vector<int32_t>& dilation) {
  std::vector<int32_t> k(2);
  for (int i = 0; i < 2; ++i) {
    const int64_t extent = in[2 + i];
    FLUID_ENFORCE(extent > 0,
                  "layer 'conv2d_transpose': without "
                  "filter_size the input's height and width must be known "
                  "to derive it from output_size; input '",
                  input, "' has shape ", in);
    const int64_t span = out[i] - (extent - 1) * stride[i] + 2 * pad[i] - 1;
    const int64_t size = span < 0 ? 0 : span / dilation[i] + 1;
    FLUID_ENFORCE(size >= 1, "layer 'conv2d_transpose': output_size ", out[0],
                  " x ", out[1], " is smaller than input '", input, "' ", in,
                  " gives at stride ", stride[0], " x ", stride[1],
                  " and padding ", pad[0], " x ", pad[1],
                  " with a 1x1 filter; give a larger output_size");
    k[i] = static_cast<int32_t>(size);
  }
  return k;
}

}  // namespace

std::string Conv2dTranspose(ProgramBuilder* b, const std::string& input,
                            int64_t num_filters,
                            const Conv2dTransposeWindow& window,
                            const std::string& act, const ParamAttr& weight,
                            const ParamAttr& bias, bool with_bias) {
  const std::string layer_type = "conv2d_transpose";
  CheckActivation(layer_type, act);
  const proto::VarDesc& in = VarOf(b, input);
  const Shape in_shape = VarShape(in);
  const DataType dtype = VarDtype(in);
  FLUID_ENFORCE(in_shape.rank() == 4, "conv2d_transpose: input '", input,
                "' must be NCHW, its shape is ", in_shape);
  FLUID_ENFORCE(in_shape[1] > 0, "conv2d_transpose: input '", input,
                "' must have a known channel count, its shape is ", in_shape);
  FLUID_ENFORCE(num_filters >= 1,
                "layer 'conv2d_transpose': argument "
                "'num_filters' must be positive, got ",
                num_filters);
  const int64_t groups = window.groups;
  FLUID_ENFORCE(
      groups >= 1 && in_shape[1] % groups == 0 && num_filters % groups == 0,
      "layer 'conv2d_transpose': argument 'groups' = ", groups,
      " must divide both the input channels (", in_shape[1], ", input '", input,
      "') and num_filters (", num_filters, ")");
  const auto stride = Pair(layer_type, "stride", window.stride, 1);
  const auto pad = Pair(layer_type, "padding", window.padding, 0);
  const auto dilation = Pair(layer_type, "dilation", window.dilation, 1);
  std::vector<int32_t> out_size;
  if (!window.output_size.empty())
    out_size = Pair(layer_type, "output_size", window.output_size, 1);
  FLUID_ENFORCE(!window.filter_size.empty() || !out_size.empty(),
                "layer 'conv2d_transpose': give filter_size or output_size "
                "(the filter is derived from output_size when filter_size "
                "is None)");
  const std::vector<int32_t> k =
      window.filter_size.empty()
          ? FilterFromOutput(input, in_shape, out_size, stride, pad, dilation)
          : Pair(layer_type, "filter_size", window.filter_size, 1);
  const std::string layer = b->UniqueName(layer_type);
  const Shape f_shape{in_shape[1], num_filters / groups, k[0], k[1]};
  const Fans fans = ComputeFans(f_shape, true);
  const std::string w = b->CreateParameter(
      weight.name.empty() ? layer + ".w_0" : weight.name, f_shape, dtype,
      weight.WithDefaultInit(Initializer::Of(Initializer::Kind::kTorchDefault)),
      fans, layer_type, "param_attr");
  std::string out = b->CreateTmpVar(layer + ".tmp", dtype);
  b->AppendOp(MakeOp(layer_type, {{"Input", {input}}, {"Filter", {w}}},
                     {{"Output", {out}}},
                     {{"output_size", out_size},
                      {"strides", stride},
                      {"paddings", pad},
                      {"dilations", dilation},
                      {"groups", static_cast<int32_t>(groups)}}));
  if (with_bias) {
    const float bound = static_cast<float>(1.0 / std::sqrt(double(fans.in)));
    const std::string bname = b->CreateParameter(
        bias.name.empty() ? layer + ".b_0" : bias.name, Shape{num_filters},
        dtype, bias.WithDefaultInit(Initializer::Uniform(-bound, bound)), fans,
        layer_type, "bias_attr");
    out = ElementwiseAdd(b, out, bname, 1);
  }
  return Activation(b, out, act, layer_type);
}

std::string ImageResize(ProgramBuilder* b, const std::string& input,
                        const ResizeSpec& spec, const std::string& name) {
  FLUID_ENFORCE_CODE(spec.resample != "TRILINEAR", ErrorCode::kUnimplemented,
                     "layer 'image_resize': resample 'TRILINEAR' resizes 5-D "
                     "volumes, which this product does not support; use "
                     "'BILINEAR' or 'NEAREST' on NCHW images");
  FLUID_ENFORCE(spec.resample == "BILINEAR" || spec.resample == "NEAREST",
                "layer 'image_resize': argument 'resample' must be "
                "'BILINEAR' or 'NEAREST', got ",
                Quote(spec.resample));
  const std::string type =
      spec.resample == "BILINEAR" ? "bilinear_interp" : "nearest_interp";
  const Shape in = VarShape(VarOf(b, input));
  FLUID_ENFORCE(in.rank() == 4, type, ": input '", input,
                "' must be 4-D NCHW (BILINEAR and NEAREST resize images), "
                "its shape is ",
                in);
  FLUID_ENFORCE(spec.align_mode == 0 || spec.align_mode == 1,
                "layer 'image_resize': argument 'align_mode' must be 0 or 1, "
                "got ",
                spec.align_mode);
  std::vector<int32_t> size = {0, 0};
  if (!spec.out_shape.empty()) {
    FLUID_ENFORCE(spec.out_shape.size() == 2,
                  "layer 'image_resize': "
                  "argument 'out_shape' must be [out_h, out_w], got ",
                  spec.out_shape.size(), " values");
    size = Pair("image_resize", "out_shape", spec.out_shape, 1);
  }
  FLUID_ENFORCE(
      !spec.out_shape.empty() || spec.scale > 0 || !spec.actual_shape.empty(),
      "layer 'image_resize': give out_shape (or an int32 var "
      "actual_shape) or a scale > 0, got scale ",
      spec.scale);
  std::vector<std::pair<std::string, std::vector<std::string>>> ins = {
      {"X", {input}}};
  if (!spec.actual_shape.empty())
    ins.push_back({"OutSize", {spec.actual_shape}});
  const std::string out =
      b->CreateTmpVar(name.empty() ? type : name, VarDtype(VarOf(b, input)));
  b->AppendOp(MakeOp(
      type, ins, {{"Out", {out}}},
      {{"out_h", size[0]},
       {"out_w", size[1]},
       // Fluid: out_shape first, scale only without it.
       {"scale", spec.out_shape.empty() ? static_cast<float>(spec.scale) : 0.f},
       {"interp_method", type.substr(0, type.find('_'))},
       {"align_corners", spec.align_corners},
       {"align_mode", static_cast<int32_t>(spec.align_mode)}}));
  return out;
}

std::string ImageResizeShort(ProgramBuilder* b, const std::string& input,
                             int64_t out_short_len,
                             const std::string& resample) {
  const Shape in = VarShape(VarOf(b, input));
  FLUID_ENFORCE(in.rank() == 4 && in[2] > 0 && in[3] > 0,
                "layer 'image_resize_short': input '", input,
                "' must be 4-D NCHW with a known height and width, its "
                "shape is ",
                in);
  FLUID_ENFORCE(out_short_len >= 1,
                "layer 'image_resize_short': argument "
                "'out_short_len' must be positive, got ",
                out_short_len);
  // The shorter side to out_short_len, the longer in proportion, rounded.
  const int s = in[2] <= in[3] ? 2 : 3, l = 5 - s;
  std::vector<int64_t> out(2);
  out[s - 2] = out_short_len;
  out[l - 2] = static_cast<int64_t>(
      static_cast<double>(in[l]) * out_short_len / in[s] + 0.5);
  ResizeSpec spec;
  spec.resample = resample;
  spec.out_shape = out;
  return ImageResize(b, input, spec);
}

namespace {

// Fluid's data_format: the ops compute on NCHW only.
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

std::string BuildConv2dTranspose(ProgramBuilder* b, const LayerArgs& a) {
  CheckNchw(a);
  std::optional<ParamAttr> weight = a.Param("param_attr");
  FLUID_ENFORCE(weight.has_value(),
                "layer 'conv2d_transpose': argument 'param_attr' cannot be "
                "false: the layer cannot go without its filter");
  std::optional<ParamAttr> bias = a.Param("bias_attr");
  Conv2dTransposeWindow w;
  w.output_size = a.IntList("output_size");
  w.filter_size = a.IntList("filter_size");
  w.padding = a.IntList("padding");
  w.stride = a.IntList("stride");
  w.dilation = a.IntList("dilation");
  w.groups = a.Int("groups");
  return Conv2dTranspose(b, a.Var("input"), a.Int("num_filters"), w,
                         a.String("act"), *weight, bias.value_or(ParamAttr{}),
                         bias.has_value());
}

// The arguments every resize layer takes, in Fluid's order up to `name`.
void DeclareResize(LayerSchema& s) {
  s.Var("input").IntList("out_shape", {}).Float("scale", 0).String("name", "");
}

std::string BuildResize(ProgramBuilder* b, const LayerArgs& a,
                        const std::string& resample, int64_t align_mode) {
  CheckNchw(a);
  ResizeSpec spec;
  spec.resample = resample;
  spec.out_shape = a.IntList("out_shape");
  spec.scale = a.Float("scale");
  spec.actual_shape = a.String("actual_shape");
  spec.align_corners = a.Bool("align_corners");
  spec.align_mode = align_mode;
  return ImageResize(b, a.Var("input"), spec, a.String("name"));
}

}  // namespace

REGISTER_LAYER(conv2d_transpose)
    .Doc(
        "Transposed 2-D convolution over NCHW input plus a per-channel "
        "bias, then act; output_size, filter_size, padding, stride and "
        "dilation are an int or [h, w], one of output_size and filter_size "
        "given. use_cudnn and name are accepted and ignored; data_format "
        "NCHW only.")
    .Var("input")
    .Int("num_filters")
    .IntList("output_size", {})
    .IntList("filter_size", {})
    .IntList("padding", {0})
    .IntList("stride", {1})
    .IntList("dilation", {1})
    .Int("groups", 1)
    .Param("param_attr")
    .Param("bias_attr")
    .Bool("use_cudnn", true)
    .String("act", "")
    .String("name", "")
    .String("data_format", "NCHW")
    .SetBuild(BuildConv2dTranspose);

REGISTER_LAYER(image_resize)
    .Doc(
        "Resizes each plane of NCHW input to out_shape [h, w], else by "
        "scale; resample 'BILINEAR' or 'NEAREST'; actual_shape, an int32 "
        "[2] var, sets the size at run time.")
    .With(DeclareResize)
    .String("resample", "BILINEAR")
    .String("actual_shape", "")
    .Bool("align_corners", true)
    .Int("align_mode", 1)
    .String("data_format", "NCHW")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return BuildResize(b, a, a.String("resample"), a.Int("align_mode"));
    });

REGISTER_LAYER(resize_bilinear)
    .Doc("image_resize with resample 'BILINEAR'.")
    .With(DeclareResize)
    .String("actual_shape", "")
    .Bool("align_corners", true)
    .Int("align_mode", 1)
    .String("data_format", "NCHW")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return BuildResize(b, a, "BILINEAR", a.Int("align_mode"));
    });

REGISTER_LAYER(resize_nearest)
    .Doc("image_resize with resample 'NEAREST'.")
    .With(DeclareResize)
    .String("actual_shape", "")
    .Bool("align_corners", true)
    .String("data_format", "NCHW")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return BuildResize(b, a, "NEAREST", 1);
    });

REGISTER_LAYER(image_resize_short)
    .Doc(
        "image_resize of NCHW input (known height and width) with its "
        "shorter side to out_short_len, the longer in proportion.")
    .Var("input")
    .Int("out_short_len")
    .String("resample", "BILINEAR")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return ImageResizeShort(b, a.Var("input"), a.Int("out_short_len"),
                              a.String("resample"));
    });

}  // namespace layers
}  // namespace fluid
