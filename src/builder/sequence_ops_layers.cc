#include "src/builder/sequence_ops_layers.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>

#include "src/builder/initializer.h"
#include "src/builder/layer_registry.h"
#include "src/builder/layers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {

namespace {

DataType DtypeOf(ProgramBuilder* b, const std::string& var) {
  return VarDtype(GetVarDesc(*b->main_block(), var));
}

const std::string& Or(const std::string& given, const std::string& fallback) {
  return given.empty() ? fallback : given;
}

// sequence_pool's op attr from the layer's pool_type ("max" -> "MAX").
std::string PoolTypeAttr(const std::string& layer, const std::string& given) {
  std::string s = given;
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  for (const char* known : {"AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"})
    if (s == known) return s;
  FLUID_THROW(ErrorCode::kInvalidArgument, "layer ", Quote(layer),
              ": argument 'pool_type': unknown pooling ", Quote(given),
              "; known: sum, average, sqrt, max, last, first");
}

}  // namespace

std::string SequencePool(ProgramBuilder* b, const std::string& input,
                         const std::string& pool_type, bool is_test,
                         float pad_value) {
  const std::string type = PoolTypeAttr("sequence_pool", pool_type);
  const std::string layer = b->UniqueName("sequence_pool");
  const std::string out = b->CreateTmpVar(layer + ".tmp", DtypeOf(b, input));
  const std::string index =
      b->CreateTmpVar(layer + ".max_index", DataType::kInt32);
  b->AppendOp(MakeOp(
      "sequence_pool", {{"X", {input}}},
      {{"Out", {out}}, {"MaxIndex", {index}}},
      {{"pooltype", type}, {"is_test", is_test}, {"pad_value", pad_value}}));
  return out;
}

std::string SequenceFirstStep(ProgramBuilder* b, const std::string& input) {
  return SequencePool(b, input, "first");
}

std::string SequenceLastStep(ProgramBuilder* b, const std::string& input) {
  return SequencePool(b, input, "last");
}

std::string SequenceSoftmax(ProgramBuilder* b, const std::string& input,
                            bool use_cudnn, const std::string& name) {
  const std::string layer = b->UniqueName(Or(name, "sequence_softmax"));
  const std::string out = b->CreateTmpVar(layer + ".tmp", DtypeOf(b, input));
  b->AppendOp(MakeOp("sequence_softmax", {{"X", {input}}}, {{"Out", {out}}},
                     {{"use_cudnn", use_cudnn}}));
  return out;
}

std::string SequenceExpand(ProgramBuilder* b, const std::string& x,
                           const std::string& y, int ref_level,
                           const std::string& name) {
  FLUID_ENFORCE(ref_level == -1 || ref_level == 0,
                "layer 'sequence_expand': argument 'ref_level' is ", ref_level,
                "; y has one level of sequences, so -1 or 0");
  const std::string layer = b->UniqueName(Or(name, "sequence_expand"));
  const std::string out = b->CreateTmpVar(layer + ".tmp", DtypeOf(b, x));
  b->AppendOp(MakeOp("sequence_expand", {{"X", {x}}, {"Y", {y}}},
                     {{"Out", {out}}}, {{"ref_level", int32_t{ref_level}}}));
  return out;
}

std::string SequenceMask(ProgramBuilder* b, const std::string& x,
                         int64_t maxlen, DataType dtype,
                         const std::string& name) {
  FLUID_ENFORCE(maxlen >= -1 && maxlen <= INT32_MAX,
                "layer 'sequence_mask': argument 'maxlen' is ", maxlen,
                "; None (the longest length) or a length >= 0");
  const std::string layer = b->UniqueName(Or(name, "sequence_mask"));
  const std::string out = b->CreateTmpVar(layer + ".tmp", dtype);
  b->AppendOp(MakeOp("sequence_mask", {{"X", {x}}}, {{"Y", {out}}},
                     {{"maxlen", static_cast<int32_t>(maxlen)},
                      {"out_dtype", static_cast<int32_t>(dtype)}}));
  return out;
}

std::vector<std::string> SequencePad(ProgramBuilder* b, const std::string& x,
                                     const std::string& pad_value,
                                     int64_t maxlen, const std::string& name) {
  FLUID_ENFORCE(maxlen >= -1 && maxlen <= INT32_MAX,
                "layer 'sequence_pad': argument 'maxlen' is ", maxlen,
                "; None (the longest sequence) or a length >= 0");
  const std::string layer = b->UniqueName(Or(name, "sequence_pad"));
  const std::string out = b->CreateTmpVar(layer + ".tmp", DtypeOf(b, x));
  const std::string length =
      b->CreateTmpVar(layer + ".length", DataType::kInt64);
  b->AppendOp(MakeOp("sequence_pad", {{"X", {x}}, {"PadValue", {pad_value}}},
                     {{"Out", {out}}, {"Length", {length}}},
                     {{"padded_length", static_cast<int32_t>(maxlen)}}));
  return {out, length};
}

std::string SequenceUnpad(ProgramBuilder* b, const std::string& x,
                          const std::string& length, const std::string& name) {
  const std::string layer = b->UniqueName(Or(name, "sequence_unpad"));
  const std::string out = b->CreateTmpVar(layer + ".tmp", DtypeOf(b, x));
  b->AppendOp(MakeOp("sequence_unpad", {{"X", {x}}, {"Length", {length}}},
                     {{"Out", {out}}}));
  return out;
}

namespace {

// The [filter_size * D, num_filters] filter of a sequence_conv layer.
std::string SequenceConvFilter(ProgramBuilder* b, const std::string& layer,
                               const std::string& input, int64_t num_filters,
                               const SequenceConvOptions& o) {
  const Shape in = VarShape(GetVarDesc(*b->main_block(), input));
  FLUID_ENFORCE(in.rank() == 2 && in[1] > 0,
                "layer 'sequence_conv': "
                "argument 'input': '",
                input,
                "' must be [rows, D] with D "
                "known, its shape is ",
                in);
  FLUID_ENFORCE(num_filters > 0 && o.filter_size > 0,
                "layer 'sequence_conv': arguments 'num_filters' (", num_filters,
                ") and 'filter_size' (", o.filter_size, ") must be positive");
  FLUID_ENFORCE(o.filter_stride == 1,
                "layer 'sequence_conv': argument "
                "'filter_stride' is ",
                o.filter_stride, "; only 1 is supported");
  const Shape w{o.filter_size * in[1], num_filters};
  return b->CreateParameter(
      o.param.name.empty() ? layer + ".w_0" : o.param.name, w,
      DtypeOf(b, input),
      o.param.WithDefaultInit(
          Initializer::Of(Initializer::Kind::kTorchDefault)),
      ComputeFans(w, false), "sequence_conv", "param_attr");
}

}  // namespace

std::string SequenceConv(ProgramBuilder* b, const std::string& input,
                         int64_t num_filters, const SequenceConvOptions& o) {
  CheckActivation("sequence_conv", o.act);
  const std::string layer = b->UniqueName(Or(o.name, "sequence_conv"));
  const std::string w = SequenceConvFilter(b, layer, input, num_filters, o);
  const int64_t start = o.padding_start == kAutoPaddingStart
                            ? -(o.filter_size / 2)
                            : o.padding_start;
  const DataType dtype = DtypeOf(b, input);
  std::string out = b->CreateTmpVar(layer + ".tmp", dtype);
  b->AppendOp(MakeOp("sequence_conv", {{"X", {input}}, {"Filter", {w}}},
                     {{"Out", {out}}},
                     {{"contextLength", static_cast<int32_t>(o.filter_size)},
                      {"contextStart", static_cast<int32_t>(start)},
                      {"contextStride", int32_t{1}},
                      {"paddingTrainable", false}}));
  if (o.with_bias) {
    const int64_t fan_in =
        o.filter_size * VarShape(GetVarDesc(*b->main_block(), input))[1];
    const float bound = static_cast<float>(1.0 / std::sqrt(double(fan_in)));
    const std::string bias = b->CreateParameter(
        o.bias.name.empty() ? layer + ".b_0" : o.bias.name, Shape{num_filters},
        dtype, o.bias.WithDefaultInit(Initializer::Uniform(-bound, bound)),
        ComputeFans(Shape{fan_in, num_filters}, false), "sequence_conv",
        "bias_attr");
    out = ElementwiseAdd(b, out, bias, 1);
  }
  return Activation(b, out, o.act, "sequence_conv");
}

REGISTER_LAYER(sequence_pool)
    .Doc(
        "One row per sequence of a LoD batch: pool_type sum, average, sqrt, "
        "max, last or first; an empty sequence gives pad_value.")
    .Var("input")
    .String("pool_type")
    .Bool("is_test", false)
    .Float("pad_value", 0.0)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return SequencePool(b, a.Var("input"), a.String("pool_type"),
                          a.Bool("is_test"),
                          static_cast<float>(a.Float("pad_value")));
    });

REGISTER_LAYER(sequence_first_step)
    .Doc("The first row of each sequence (sequence_pool first).")
    .Var("input")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return SequenceFirstStep(b, a.Var("input"));
    });

REGISTER_LAYER(sequence_last_step)
    .Doc("The last row of each sequence (sequence_pool last).")
    .Var("input")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return SequenceLastStep(b, a.Var("input"));
    });

REGISTER_LAYER(sequence_softmax)
    .Doc("Softmax within each sequence of a LoD batch of one value per row.")
    .Var("input")
    .Bool("use_cudnn", false)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return SequenceSoftmax(b, a.Var("input"), a.Bool("use_cudnn"),
                             a.String("name"));
    });

REGISTER_LAYER(sequence_expand)
    .Doc(
        "x's sequences (or rows, without a LoD) repeated as y's sequences "
        "are long.")
    .Var("x")
    .Var("y")
    .Int("ref_level", -1)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return SequenceExpand(b, a.Var("x"), a.Var("y"), a.Int32("ref_level"),
                            a.String("name"));
    });

REGISTER_LAYER(sequence_mask)
    .Doc("Lengths x -> mask [x.shape..., maxlen] (maxlen -1: the longest).")
    .Var("x")
    .Int("maxlen", -1)
    .String("dtype", "int64")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return SequenceMask(b, a.Var("x"), a.Int("maxlen"), DtypeArg(a, "dtype"),
                          a.String("name"));
    });

REGISTER_LAYER(sequence_pad)
    .Doc(
        "(padded [sequences, maxlen, ...], int64 lengths); maxlen -1: the "
        "longest sequence.")
    .Var("x")
    .Var("pad_value")
    .Int("maxlen", -1)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return SequencePad(b, a.Var("x"), a.Var("pad_value"), a.Int("maxlen"),
                         a.String("name"));
    });

REGISTER_LAYER(sequence_unpad)
    .Doc("The LoD batch of each sequence's first length rows of dense x.")
    .Var("x")
    .Var("length")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return SequenceUnpad(b, a.Var("x"), a.Var("length"), a.String("name"));
    });

REGISTER_LAYER(sequence_conv)
    .Doc(
        "1-D convolution along each sequence: filter_size rows from "
        "padding_start (default -(filter_size / 2)), zero padding, then "
        "bias and act.")
    .Var("input")
    .Int("num_filters")
    .Int("filter_size", 3)
    .Int("filter_stride", 1)
    .Bool("padding", true)
    .Int("padding_start", kAutoPaddingStart)
    .Param("bias_attr")
    .Param("param_attr")
    .String("act", "")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      SequenceConvOptions o;
      o.filter_size = a.Int("filter_size");
      o.filter_stride = a.Int("filter_stride");
      o.padding = a.Bool("padding");
      o.padding_start = a.Int("padding_start");
      std::optional<ParamAttr> bias = a.Param("bias_attr");
      o.with_bias = bias.has_value();
      if (bias) o.bias = *bias;
      std::optional<ParamAttr> param = a.Param("param_attr");
      FLUID_ENFORCE(param.has_value(),
                    "layer 'sequence_conv': argument "
                    "'param_attr' cannot be false: the layer cannot go "
                    "without its filter");
      o.param = *param;
      o.act = a.String("act");
      o.name = a.String("name");
      return SequenceConv(b, a.Var("input"), a.Int("num_filters"), o);
    });

}  // namespace layers
}  // namespace fluid
