// The tensor layers (tensor_layers.h), each registered by name with its
// arguments as Fluid names them; the Python functions of fluid.layers take
// the same, in this order.
#include "src/builder/tensor_layers.h"

#include <climits>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "src/builder/layer_registry.h"
#include "src/builder/layers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {
namespace {

DataType DtypeOf(ProgramBuilder* b, const std::string& var) {
  return VarDtype(GetVarDesc(*b->main_block(), var));
}

Shape ShapeOf(ProgramBuilder* b, const std::string& var) {
  return VarShape(GetVarDesc(*b->main_block(), var));
}

// A new output var named after `name` when given, else after `type`.
std::string NewVar(ProgramBuilder* b, const std::string& type,
                   const std::string& name, DataType dtype) {
  return b->CreateTmpVar(name.empty() ? type : name, dtype);
}

proto::VarDesc* GetMutableVar(ProgramBuilder* b, const std::string& var) {
  return FindMutableVarDesc(b->main_block(), var);
}

// The output var of a layer that may write into an existing one: `given`
// (argument `arg`, checked to exist) when not empty, else a new var named
// after `type`.
std::string OutputVar(ProgramBuilder* b, const std::string& layer,
                      const std::string& arg, const std::string& given,
                      const std::string& type, DataType dtype) {
  if (given.empty()) return NewVar(b, type, "", dtype);
  FLUID_ENFORCE(FindVarDesc(*b->main_block(), given) != nullptr, "layer ",
                Quote(layer), ": argument ", Quote(arg), ": no variable ",
                Quote(given), " in the program");
  return given;
}

}  // namespace

std::string Concat(ProgramBuilder* b, const std::vector<std::string>& input,
                   int axis, const std::string& name) {
  FLUID_ENFORCE(!input.empty(),
                "layer 'concat': argument 'input' must name at least one "
                "variable");
  std::string out = NewVar(b, "concat", name, DtypeOf(b, input[0]));
  b->AppendOp(MakeOp("concat", {{"X", input}}, {{"Out", {out}}},
                     {{"axis", int32_t{axis}}}));
  return out;
}

// Pieces of the sizes in `sections` (one may be -1); Python turns Fluid's
// split(x, n) into n equal sizes.
std::vector<std::string> Split(ProgramBuilder* b, const std::string& input,
                               const std::vector<int64_t>& sections, int dim,
                               const std::string& name) {
  FLUID_ENFORCE(!sections.empty(),
                "layer 'split': argument 'num_or_sections' must hold at "
                "least one size");
  std::vector<std::string> outs;
  for (size_t i = 0; i < sections.size(); ++i)
    outs.push_back(NewVar(b, "split", name, DtypeOf(b, input)));
  b->AppendOp(MakeOp(
      "split", {{"X", {input}}}, {{"Out", outs}},
      {{"axis", int32_t{dim}},
       {"sections", std::vector<int32_t>(sections.begin(), sections.end())}}));
  return outs;
}

std::string Transpose(ProgramBuilder* b, const std::string& x,
                      const std::vector<int64_t>& perm,
                      const std::string& name) {
  const Shape s = ShapeOf(b, x);
  FLUID_ENFORCE(static_cast<int>(perm.size()) == s.rank(),
                "layer 'transpose': argument 'perm' ", Shape(perm),
                " must have one entry per dim of x '", x, "' ", s);
  std::string out = NewVar(b, "transpose", name, DtypeOf(b, x));
  b->AppendOp(
      MakeOp("transpose", {{"X", {x}}}, {{"Out", {out}}},
             {{"axis", std::vector<int32_t>(perm.begin(), perm.end())}}));
  return out;
}

// flatten is a reshape to [prod(dims[:axis]), prod(dims[axis:])]; one side
// may hold an unknown (batch) dim, left to the reshape to infer.
std::string Flatten(ProgramBuilder* b, const std::string& x, int axis,
                    const std::string& name) {
  const Shape s = ShapeOf(b, x);
  FLUID_ENFORCE(axis >= 0 && axis <= s.rank(), "layer 'flatten': argument ",
                "'axis' ", axis, " must be in [0, ", s.rank(), "] for x '", x,
                "' ", s);
  const int64_t outer = s.Product(0, axis);
  const int64_t inner = s.Product(axis, s.rank());
  FLUID_ENFORCE(outer >= 0 || inner >= 0, "layer 'flatten': x '", x, "' ", s,
                " has unknown dims on both sides of axis ", axis);
  std::string out = NewVar(b, "flatten", name, DtypeOf(b, x));
  b->AppendOp(MakeOp("reshape", {{"X", {x}}}, {{"Out", {out}}},
                     {{"shape", std::vector<int64_t>{outer, inner}}}));
  return out;
}

// The sum op over `input`, into `out` when given (an existing var).
std::string Sums(ProgramBuilder* b, const std::vector<std::string>& input,
                 const std::string& out) {
  FLUID_ENFORCE(!input.empty(),
                "layer 'sums': argument 'input' must name at least one "
                "variable");
  std::string result =
      OutputVar(b, "sums", "out", out, "sums", DtypeOf(b, input[0]));
  b->AppendOp(MakeOp("sum", {{"X", input}}, {{"Out", {result}}}));
  return result;
}

std::string Matmul(ProgramBuilder* b, const std::string& x,
                   const std::string& y, bool transpose_x, bool transpose_y,
                   float alpha, const std::string& name) {
  std::string out = NewVar(b, "matmul", name, DtypeOf(b, x));
  b->AppendOp(MakeOp("matmul", {{"X", {x}}, {"Y", {y}}}, {{"Out", {out}}},
                     {{"transpose_X", transpose_x},
                      {"transpose_Y", transpose_y},
                      {"alpha", alpha}}));
  return out;
}

std::string Mul(ProgramBuilder* b, const std::string& x, const std::string& y,
                int x_num_col_dims, int y_num_col_dims,
                const std::string& name) {
  std::string out = NewVar(b, "mul", name, DtypeOf(b, x));
  b->AppendOp(MakeOp("mul", {{"X", {x}}, {"Y", {y}}}, {{"Out", {out}}},
                     {{"x_num_col_dims", int32_t{x_num_col_dims}},
                      {"y_num_col_dims", int32_t{y_num_col_dims}}}));
  return out;
}

std::string Cast(ProgramBuilder* b, const std::string& x, DataType dtype) {
  std::string out = NewVar(b, "cast", "", dtype);
  b->AppendOp(MakeOp("cast", {{"X", {x}}}, {{"Out", {out}}},
                     {{"in_dtype", static_cast<int32_t>(DtypeOf(b, x))},
                      {"out_dtype", static_cast<int32_t>(dtype)}}));
  return out;
}

// A copy of `input` into `output` when given (an existing var), else into
// a new var.
std::string Assign(ProgramBuilder* b, const std::string& input,
                   const std::string& output) {
  std::string out =
      OutputVar(b, "assign", "output", output, "assign", DtypeOf(b, input));
  b->AppendOp(MakeOp("assign", {{"X", {input}}}, {{"Out", {out}}}));
  return out;
}

namespace {

// The numbers of `text`, separated by spaces, as T; an error naming the
// layer and the argument when one is not a number.
template <typename T>
std::vector<T> ParseValues(const std::string& text) {
  std::vector<T> values;
  const char* p = text.c_str();
  while (*p != '\0') {
    char* end = nullptr;
    if constexpr (std::is_floating_point_v<T>) {
      values.push_back(static_cast<T>(std::strtod(p, &end)));
    } else {
      values.push_back(static_cast<T>(std::strtoll(p, &end, 10)));
    }
    FLUID_ENFORCE(end != p && (*end == ' ' || *end == '\0'),
                  "layer '_assign_value': argument 'values': not a list of "
                  "numbers at ",
                  Quote(p, 20));
    p = *end == ' ' ? end + 1 : end;
  }
  return values;
}

}  // namespace

std::string AssignValue(ProgramBuilder* b, const std::string& values,
                        const std::vector<int64_t>& shape, DataType dtype,
                        const std::string& output) {
  AttributeMap attrs = {{"shape", shape},
                        {"dtype", static_cast<int32_t>(dtype)}};
  if (dtype == DataType::kFloat32) {
    attrs["fp32_values"] = ParseValues<float>(values);
  } else if (dtype == DataType::kInt32) {
    attrs["int32_values"] = ParseValues<int32_t>(values);
  } else if (dtype == DataType::kInt64) {
    attrs["int64_values"] = ParseValues<int64_t>(values);
  } else {
    FLUID_THROW(ErrorCode::kInvalidArgument, "layer 'assign': values of dtype ",
                dtype, " are not supported; use float32, int32 or int64");
  }
  std::string out =
      OutputVar(b, "assign", "output", output, "assign_value", dtype);
  if (output.empty()) GetMutableVar(b, out)->set_stop_gradient(true);
  b->AppendOp(MakeOp("assign_value", {}, {{"Out", {out}}}, attrs));
  return out;
}

std::string OneHot(ProgramBuilder* b, const std::string& input, int64_t depth) {
  FLUID_ENFORCE(depth >= 1 && depth <= INT32_MAX,
                "layer 'one_hot': argument 'depth' must be positive, got ",
                depth);
  std::string out = NewVar(b, "one_hot", "", DataType::kFloat32);
  // A function of integer ids: no gradient flows through it.
  GetMutableVar(b, out)->set_stop_gradient(true);
  b->AppendOp(MakeOp("one_hot", {{"X", {input}}}, {{"Out", {out}}},
                     {{"depth", static_cast<int32_t>(depth)}}));
  return out;
}

std::string ArgMax(ProgramBuilder* b, const std::string& x, int64_t axis) {
  std::string out = NewVar(b, "arg_max", "", DataType::kInt64);
  b->AppendOp(
      MakeOp("arg_max", {{"X", {x}}}, {{"Out", {out}}}, {{"axis", axis}}));
  return out;
}

// (input - label)^2, elementwise.
std::string SquareErrorCost(ProgramBuilder* b, const std::string& input,
                            const std::string& label) {
  const DataType dtype = DtypeOf(b, input);
  std::string diff = NewVar(b, "square_error_cost.diff", "", dtype);
  b->AppendOp(MakeOp("elementwise_sub", {{"X", {input}}, {"Y", {label}}},
                     {{"Out", {diff}}}, {{"axis", int32_t{-1}}}));
  std::string out = NewVar(b, "square_error_cost", "", dtype);
  b->AppendOp(MakeOp("square", {{"X", {diff}}}, {{"Out", {out}}}));
  return out;
}

std::string SigmoidCrossEntropyWithLogits(
    ProgramBuilder* b, const std::string& x, const std::string& label,
    int ignore_index, const std::string& name, bool normalize) {
  std::string out =
      NewVar(b, "sigmoid_cross_entropy_with_logits", name, DtypeOf(b, x));
  b->AppendOp(MakeOp(
      "sigmoid_cross_entropy_with_logits", {{"X", {x}}, {"Label", {label}}},
      {{"Out", {out}}},
      {{"ignore_index", int32_t{ignore_index}}, {"normalize", normalize}}));
  return out;
}

std::vector<std::string> TopK(ProgramBuilder* b, const std::string& input,
                              int64_t k, const std::string& name) {
  FLUID_ENFORCE(k >= 1 && k <= INT32_MAX,
                "layer 'topk': argument 'k' must be positive, got ", k);
  std::string values = NewVar(b, "top_k", name, DtypeOf(b, input));
  std::string indices = NewVar(b, "top_k_indices", "", DataType::kInt64);
  b->AppendOp(MakeOp("top_k", {{"X", {input}}},
                     {{"Out", {values}}, {"Indices", {indices}}},
                     {{"k", static_cast<int32_t>(k)}}));
  return {values, indices};
}

REGISTER_LAYER(concat)
    .Doc("The inputs joined along axis (negative counts from the end).")
    .VarList("input")
    .Int("axis", 0)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Concat(b, a.VarList("input"), a.Int32("axis"), a.String("name"));
    });

REGISTER_LAYER(split)
    .Doc(
        "input cut along dim into pieces of the sizes in num_or_sections "
        "(one may be -1); returns the pieces.")
    .Var("input")
    .IntList("num_or_sections")
    .Int("dim", -1)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Split(b, a.Var("input"), a.IntList("num_or_sections"),
                   a.Int32("dim"), a.String("name"));
    });

REGISTER_LAYER(transpose)
    .Doc("x with its dims permuted: output dim i is x's dim perm[i].")
    .Var("x")
    .IntList("perm")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Transpose(b, a.Var("x"), a.IntList("perm"), a.String("name"));
    });

REGISTER_LAYER(flatten)
    .Doc("x as a 2-D tensor [prod(dims[:axis]), prod(dims[axis:])].")
    .Var("x")
    .Int("axis", 1)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Flatten(b, a.Var("x"), a.Int32("axis"), a.String("name"));
    });

REGISTER_LAYER(sums)
    .Doc("The elementwise sum of the inputs, into out when given.")
    .VarList("input")
    .String("out", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Sums(b, a.VarList("input"), a.String("out"));
    });

REGISTER_LAYER(matmul)
    .Doc(
        "alpha * op(x) op(y), op transposing the last two dims when asked; "
        "rank 2 or batched rank 3.")
    .Var("x")
    .Var("y")
    .Bool("transpose_x", false)
    .Bool("transpose_y", false)
    .Float("alpha", 1.0)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Matmul(b, a.Var("x"), a.Var("y"), a.Bool("transpose_x"),
                    a.Bool("transpose_y"), static_cast<float>(a.Float("alpha")),
                    a.String("name"));
    });

REGISTER_LAYER(mul)
    .Doc(
        "x flattened to 2-D at x_num_col_dims times y flattened at "
        "y_num_col_dims.")
    .Var("x")
    .Var("y")
    .Int("x_num_col_dims", 1)
    .Int("y_num_col_dims", 1)
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Mul(b, a.Var("x"), a.Var("y"), a.Int32("x_num_col_dims"),
                 a.Int32("y_num_col_dims"), a.String("name"));
    });

REGISTER_LAYER(cast)
    .Doc(
        "x converted to dtype (float32, float64, int32, int64, float16, "
        "bfloat16).")
    .Var("x")
    .String("dtype")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Cast(b, a.Var("x"), DtypeArg(a, "dtype"));
    });

REGISTER_LAYER(assign)
    .Doc("A copy of input, into output when given.")
    .Var("input")
    .String("output", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Assign(b, a.Var("input"), a.String("output"));
    });

// What fluid.layers.assign builds for a NumPy array: `values` is the
// array's elements as decimal text, separated by spaces (Python's repr of a
// float reads back to the same value), in row-major order.
REGISTER_LAYER(_assign_value)
    .Doc("A constant of the given shape and dtype holding values.")
    .String("values")
    .IntList("shape")
    .String("dtype")
    .String("output", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return AssignValue(b, a.String("values"), a.IntList("shape"),
                         DtypeArg(a, "dtype"), a.String("output"));
    });

REGISTER_LAYER(one_hot)
    .Doc(
        "The float32 one-hot rows [..., depth] of int64 ids [..., 1]; with "
        "allow_out_of_range an id outside [0, depth) gives a row of zeros "
        "instead of an error.")
    .Var("input")
    .Int("depth")
    .Bool("allow_out_of_range", false)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      std::string out = OneHot(b, a.Var("input"), a.Int("depth"));
      if (a.Bool("allow_out_of_range")) {
        proto::BlockDesc* block = b->main_block();
        SetOpAttr(block->mutable_ops(block->ops_size() - 1),
                  "allow_out_of_range", true);
      }
      return out;
    });

REGISTER_LAYER(argmax)
    .Doc("int64 index of the largest element along axis, that dim removed.")
    .Var("x")
    .Int("axis", 0)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return ArgMax(b, a.Var("x"), a.Int("axis"));
    });

REGISTER_LAYER(topk)
    .Doc(
        "The k largest values of each row (last dim) in descending order, "
        "and their int64 indices.")
    .Var("input")
    .Int("k")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return TopK(b, a.Var("input"), a.Int("k"), a.String("name"));
    });

REGISTER_LAYER(square_error_cost)
    .Doc("(input - label)^2, elementwise.")
    .Var("input")
    .Var("label")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return SquareErrorCost(b, a.Var("input"), a.Var("label"));
    });

REGISTER_LAYER(sigmoid_cross_entropy_with_logits)
    .Doc(
        "Elementwise cross entropy of sigmoid(x) against probabilities "
        "label, from the logits in a numerically stable form; elements "
        "labelled ignore_index count 0, normalize divides by the others.")
    .Var("x")
    .Var("label")
    .Int("ignore_index", -100)
    .String("name", "")
    .Bool("normalize", false)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return SigmoidCrossEntropyWithLogits(
          b, a.Var("x"), a.Var("label"), a.Int32("ignore_index"),
          a.String("name"), a.Bool("normalize"));
    });

}  // namespace layers
}  // namespace fluid
