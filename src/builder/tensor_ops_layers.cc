// The layers of tensor_ops_layers.h, each registered by name with its
// arguments as Fluid 1.x names them; the Python functions of
// fluid.layers (layers_tensor.py) take the same, in this order.
#include "src/builder/tensor_ops_layers.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "src/builder/layer_registry.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {
namespace {

Shape ShapeOfVar(ProgramBuilder* b, const std::string& var) {
  return VarShape(GetVarDesc(*b->main_block(), var));
}

DataType DtypeOf(ProgramBuilder* b, const std::string& var) {
  return VarDtype(GetVarDesc(*b->main_block(), var));
}

// A new output var named after `name` when given, else after `type`.
std::string NewVar(ProgramBuilder* b, const std::string& type,
                   const std::string& name, DataType dtype) {
  return b->CreateTmpVar(name.empty() ? type : name, dtype);
}

// `values` as the int32 list an op attr holds; an error naming the layer
// and the argument for one out of int32's range.
std::vector<int32_t> Int32List(const std::string& layer, const std::string& arg,
                               const std::vector<int64_t>& values) {
  std::vector<int32_t> out;
  for (int64_t v : values) {
    FLUID_ENFORCE(v >= INT32_MIN && v <= INT32_MAX, "layer ", Quote(layer),
                  ": argument ", Quote(arg), " holds ", v,
                  ", out of the int32 range");
    out.push_back(static_cast<int32_t>(v));
  }
  return out;
}

}  // namespace

std::string Reduce(ProgramBuilder* b, const std::string& type,
                   const std::string& input, const std::vector<int64_t>& dim,
                   bool keep_dim, const std::string& name) {
  const int rank = ShapeOfVar(b, input).rank();
  // Fluid reduces everything when no dim is given or every dim is named.
  const bool all = dim.empty() || static_cast<int>(dim.size()) == rank;
  std::string out = NewVar(b, type, name, DtypeOf(b, input));
  b->AppendOp(MakeOp(type, {{"X", {input}}}, {{"Out", {out}}},
                     {{"dim", dim.empty() ? std::vector<int32_t>{0}
                                          : Int32List(type, "dim", dim)},
                      {"keep_dim", keep_dim},
                      {"reduce_all", all}}));
  return out;
}

namespace {

// squeeze2 or unsqueeze2 of `input`: Out, and XShape for the gradient.
std::string SqueezeOp(ProgramBuilder* b, const std::string& type,
                      const std::string& layer, const std::string& input,
                      const std::vector<int64_t>& axes,
                      const std::string& name) {
  const DataType dtype = DtypeOf(b, input);
  std::string out = NewVar(b, layer, name, dtype);
  std::string xshape = NewVar(b, layer + ".xshape", "", dtype);
  b->AppendOp(MakeOp(type, {{"X", {input}}},
                     {{"Out", {out}}, {"XShape", {xshape}}},
                     {{"axes", Int32List(layer, "axes", axes)}}));
  return out;
}

}  // namespace

std::string Squeeze(ProgramBuilder* b, const std::string& input,
                    const std::vector<int64_t>& axes, const std::string& name) {
  return SqueezeOp(b, "squeeze2", "squeeze", input, axes, name);
}

std::string Unsqueeze(ProgramBuilder* b, const std::string& input,
                      const std::vector<int64_t>& axes,
                      const std::string& name) {
  FLUID_ENFORCE(!axes.empty(),
                "layer 'unsqueeze': argument 'axes' must name "
                "at least one position");
  return SqueezeOp(b, "unsqueeze2", "unsqueeze", input, axes, name);
}

std::string Stack(ProgramBuilder* b, const std::vector<std::string>& x,
                  int axis) {
  FLUID_ENFORCE(!x.empty(),
                "layer 'stack': argument 'x' must name at least "
                "one variable");
  std::string out = NewVar(b, "stack", "", DtypeOf(b, x[0]));
  b->AppendOp(
      MakeOp("stack", {{"X", x}}, {{"Y", {out}}}, {{"axis", int32_t{axis}}}));
  return out;
}

std::vector<std::string> Unstack(ProgramBuilder* b, const std::string& x,
                                 int axis, int64_t num) {
  const Shape s = ShapeOfVar(b, x);
  FLUID_ENFORCE(axis >= -s.rank() && axis < s.rank(),
                "layer 'unstack': ", "argument 'axis' ", axis,
                " is out of range for x '", x, "' ", s, " (allowed: [",
                -s.rank(), ", ", s.rank(), "))");
  const int a = axis < 0 ? axis + s.rank() : axis;
  if (num < 0) num = s[a];
  FLUID_ENFORCE(num > 0 && num <= INT32_MAX, "layer 'unstack': x '", x, "' ", s,
                " has an unknown or empty dim ", a,
                "; give num, the number of slices");
  std::vector<std::string> outs;
  for (int64_t i = 0; i < num; ++i)
    outs.push_back(NewVar(b, "unstack", "", DtypeOf(b, x)));
  b->AppendOp(
      MakeOp("unstack", {{"X", {x}}}, {{"Y", outs}},
             {{"axis", int32_t{axis}}, {"num", static_cast<int32_t>(num)}}));
  return outs;
}

std::string Expand(ProgramBuilder* b, const std::string& x,
                   const std::vector<int64_t>& expand_times,
                   const std::string& name) {
  std::string out = NewVar(b, "expand", name, DtypeOf(b, x));
  b->AppendOp(MakeOp(
      "expand", {{"X", {x}}}, {{"Out", {out}}},
      {{"expand_times", Int32List("expand", "expand_times", expand_times)}}));
  return out;
}

std::string Gather(ProgramBuilder* b, const std::string& input,
                   const std::string& index, bool overwrite) {
  std::string out = NewVar(b, "gather", "", DtypeOf(b, input));
  b->AppendOp(MakeOp("gather", {{"X", {input}}, {"Index", {index}}},
                     {{"Out", {out}}}, {{"overwrite", overwrite}}));
  return out;
}

std::string Slice(ProgramBuilder* b, const std::string& input,
                  const std::vector<int64_t>& axes,
                  const std::vector<int64_t>& starts,
                  const std::vector<int64_t>& ends) {
  // Fluid's INT_MAX-like ends ("to the end") fit int32 once clamped.
  auto clamp = [](std::vector<int64_t> v) {
    for (int64_t& e : v)
      e = std::max<int64_t>(std::min<int64_t>(e, INT32_MAX), INT32_MIN);
    return v;
  };
  std::string out = NewVar(b, "slice", "", DtypeOf(b, input));
  b->AppendOp(MakeOp("slice", {{"Input", {input}}}, {{"Out", {out}}},
                     {{"axes", Int32List("slice", "axes", axes)},
                      {"starts", Int32List("slice", "starts", clamp(starts))},
                      {"ends", Int32List("slice", "ends", clamp(ends))}}));
  return out;
}

std::string ShapeOf(ProgramBuilder* b, const std::string& input) {
  std::string out = NewVar(b, "shape", "", DataType::kInt32);
  FindMutableVarDesc(b->main_block(), out)->set_stop_gradient(true);
  b->AppendOp(MakeOp("shape", {{"Input", {input}}}, {{"Out", {out}}}));
  return out;
}

namespace {

// The arguments every reduce_* layer takes, in Fluid's order.
void DeclareReduce(LayerSchema& s) {
  s.Var("input").IntList("dim", {}).Bool("keep_dim", false).String("name", "");
}

std::string BuildReduce(ProgramBuilder* b, const LayerArgs& a) {
  return Reduce(b, a.layer(), a.Var("input"), a.IntList("dim"),
                a.Bool("keep_dim"), a.String("name"));
}

}  // namespace

REGISTER_LAYER(reduce_sum)
    .Doc("The sum of input over dim (every dim when dim is empty).")
    .With(DeclareReduce)
    .SetBuild(BuildReduce);
REGISTER_LAYER(reduce_mean)
    .Doc("The mean of input over dim (every dim when dim is empty).")
    .With(DeclareReduce)
    .SetBuild(BuildReduce);
REGISTER_LAYER(reduce_max)
    .Doc("The largest element of input over dim (every dim when empty).")
    .With(DeclareReduce)
    .SetBuild(BuildReduce);
REGISTER_LAYER(reduce_min)
    .Doc("The smallest element of input over dim (every dim when empty).")
    .With(DeclareReduce)
    .SetBuild(BuildReduce);
REGISTER_LAYER(reduce_prod)
    .Doc("The product of input over dim (every dim when dim is empty).")
    .With(DeclareReduce)
    .SetBuild(BuildReduce);

REGISTER_LAYER(squeeze)
    .Doc(
        "input without its dims of size 1 at axes (every dim of size 1 when "
        "axes is empty); a named dim of another size stays.")
    .Var("input")
    .IntList("axes")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Squeeze(b, a.Var("input"), a.IntList("axes"), a.String("name"));
    });

REGISTER_LAYER(unsqueeze)
    .Doc("input with dims of size 1 inserted at axes, one after another.")
    .Var("input")
    .IntList("axes")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Unsqueeze(b, a.Var("input"), a.IntList("axes"), a.String("name"));
    });

REGISTER_LAYER(stack)
    .Doc("The inputs (one shape and dtype) joined along a new dim at axis.")
    .VarList("x")
    .Int("axis", 0)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Stack(b, a.VarList("x"), a.Int32("axis"));
    });

REGISTER_LAYER(unstack)
    .Doc("x cut into its slices along axis, that dim removed.")
    .Var("x")
    .Int("axis", 0)
    .Int("num", -1)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Unstack(b, a.Var("x"), a.Int32("axis"), a.Int("num"));
    });

REGISTER_LAYER(expand)
    .Doc("x tiled expand_times[d] times along each dim d.")
    .Var("x")
    .IntList("expand_times")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Expand(b, a.Var("x"), a.IntList("expand_times"), a.String("name"));
    });

REGISTER_LAYER(gather)
    .Doc("Rows of input picked along dim 0 by index (int32 or int64).")
    .Var("input")
    .Var("index")
    .Bool("overwrite", true)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Gather(b, a.Var("input"), a.Var("index"), a.Bool("overwrite"));
    });

REGISTER_LAYER(slice)
    .Doc("input[starts[k]:ends[k]] along each dim axes[k].")
    .Var("input")
    .IntList("axes")
    .IntList("starts")
    .IntList("ends")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Slice(b, a.Var("input"), a.IntList("axes"), a.IntList("starts"),
                   a.IntList("ends"));
    });

REGISTER_LAYER(shape)
    .Doc("input's shape as an int32 tensor [rank].")
    .Var("input")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return ShapeOf(b, a.Var("input"));
    });

}  // namespace layers
}  // namespace fluid
