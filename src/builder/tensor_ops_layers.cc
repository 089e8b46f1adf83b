// The layers of tensor_ops_layers.h, each registered by name with its
// arguments as Fluid 1.x names them; the Python functions of
// fluid.layers (layers_tensor.py) take the same, in this order.
#include "src/builder/tensor_ops_layers.h"

#include <cstdint>
#include <string>
#include <vector>

#include "src/builder/layer_registry.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {
namespace {

Shape ShapeOf(ProgramBuilder* b, const std::string& var) {
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
  const int rank = ShapeOf(b, input).rank();
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

}  // namespace layers
}  // namespace fluid
