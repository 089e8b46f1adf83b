// The layers of control flow that live in one block: the compare and
// logical ops (bool outputs), is_empty, increment, and tensor arrays
// (create_array, array_write, array_read, array_length). Python:
// layers_control.py.
#include "src/builder/control_layers.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "src/builder/layer_registry.h"
#include "src/builder/layers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {
namespace {

const proto::VarDesc& VarOf(ProgramBuilder* b, const std::string& layer,
                            const std::string& arg, const std::string& name) {
  const proto::VarDesc* v = FindVarDesc(*b->main_block(), name);
  FLUID_ENFORCE_CODE(v != nullptr, ErrorCode::kNotFound, "layer ", Quote(layer),
                     ": argument ", Quote(arg), ": no variable ", Quote(name),
                     " in the program");
  return *v;
}

// `given` (checked to be a bool var) when not empty, else a new bool var.
std::string BoolOutput(ProgramBuilder* b, const std::string& layer,
                       const std::string& arg, const std::string& given) {
  if (given.empty()) return b->CreateTmpVar(layer, DataType::kBool);
  const proto::VarDesc& v = VarOf(b, layer, arg, given);
  FLUID_ENFORCE(VarDtype(v) == DataType::kBool, "layer ", Quote(layer),
                ": argument ", Quote(arg), ": ", Quote(given), " is ",
                DataTypeName(VarDtype(v)), "; it must be a bool var");
  return given;
}

// The array var `name` (argument `array` of `layer`), checked to be one.
const proto::VarDesc& CheckArray(ProgramBuilder* b, const std::string& layer,
                                 const std::string& name) {
  const proto::VarDesc& v = VarOf(b, layer, "array", name);
  FLUID_ENFORCE(v.type() == proto::VarDesc::LOD_TENSOR_ARRAY, "layer ",
                Quote(layer), ": argument 'array': ", Quote(name),
                " is not a tensor array (fluid.layers.create_array)");
  return v;
}

// Fluid's less_than alone takes force_cpu (which changes nothing here:
// Out lives where the executor runs).
LayerSchema& CompareLayer(LayerSchema& s, const std::string& what,
                          bool force_cpu_arg = false) {
  s.Doc("x " + what + " y, elementwise: a bool var (into cond when given).")
      .Var("x")
      .Var("y");
  if (force_cpu_arg) s.Bool("force_cpu", false);
  return s.String("cond", "")
      .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
        return Compare(b, a.layer(), a.Var("x"), a.Var("y"), a.String("cond"));
      });
}

LayerSchema& LogicalLayer(LayerSchema& s, const std::string& what) {
  return s.Doc("x " + what + " y, elementwise on bool vars.")
      .Var("x")
      .Var("y")
      .String("out", "")
      .String("name", "")
      .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
        return Logical(b, a.layer(), a.Var("x"), a.Var("y"), a.String("out"));
      });
}

}  // namespace

std::string Compare(ProgramBuilder* b, const std::string& type,
                    const std::string& x, const std::string& y,
                    const std::string& cond) {
  const std::string out = BoolOutput(b, type, "cond", cond);
  b->AppendOp(MakeOp(type, {{"X", {x}}, {"Y", {y}}}, {{"Out", {out}}}));
  FindMutableVarDesc(b->main_block(), out)->set_stop_gradient(true);
  return out;
}

std::string Logical(ProgramBuilder* b, const std::string& type,
                    const std::string& x, const std::string& y,
                    const std::string& out_name) {
  const std::string out = BoolOutput(b, type, "out", out_name);
  if (y.empty()) {
    b->AppendOp(MakeOp(type, {{"X", {x}}}, {{"Out", {out}}}));
  } else {
    b->AppendOp(MakeOp(type, {{"X", {x}}, {"Y", {y}}}, {{"Out", {out}}}));
  }
  FindMutableVarDesc(b->main_block(), out)->set_stop_gradient(true);
  return out;
}

std::string Increment(ProgramBuilder* b, const std::string& x, double value,
                      bool in_place) {
  const std::string out =
      in_place ? x
               : b->CreateTmpVar("increment",
                                 VarDtype(VarOf(b, "increment", "x", x)));
  b->AppendOp(MakeOp("increment", {{"X", {x}}}, {{"Out", {out}}},
                     {{"step", static_cast<float>(value)}}));
  return out;
}

std::string IsEmpty(ProgramBuilder* b, const std::string& x,
                    const std::string& cond) {
  VarOf(b, "is_empty", "x", x);
  const std::string out = BoolOutput(b, "is_empty", "cond", cond);
  b->AppendOp(MakeOp("is_empty", {{"X", {x}}}, {{"Out", {out}}}));
  return out;
}

std::string CreateArray(ProgramBuilder* b, DataType dtype) {
  const std::string out = b->CreateTmpVar("array", dtype);
  FindMutableVarDesc(b->main_block(), out)
      ->set_type(proto::VarDesc::LOD_TENSOR_ARRAY);
  b->AppendOp(MakeOp("create_array", {}, {{"Out", {out}}},
                     {{"dtype", static_cast<int32_t>(dtype)}}));
  return out;
}

std::string ArrayWrite(ProgramBuilder* b, const std::string& x,
                       const std::string& i, const std::string& array) {
  std::string out = array;
  if (out.empty()) {
    out = b->CreateTmpVar("array", VarDtype(VarOf(b, "array_write", "x", x)));
    FindMutableVarDesc(b->main_block(), out)
        ->set_type(proto::VarDesc::LOD_TENSOR_ARRAY);
  } else {
    CheckArray(b, "array_write", out);
  }
  b->AppendOp(
      MakeOp("write_to_array", {{"X", {x}}, {"I", {i}}}, {{"Out", {out}}}));
  return out;
}

std::string ArrayRead(ProgramBuilder* b, const std::string& array,
                      const std::string& i) {
  const proto::VarDesc& v = CheckArray(b, "array_read", array);
  const std::string out = b->CreateTmpVar("array_read", VarDtype(v));
  b->AppendOp(MakeOp("read_from_array", {{"X", {array}}, {"I", {i}}},
                     {{"Out", {out}}}));
  return out;
}

std::string ArrayLength(ProgramBuilder* b, const std::string& array) {
  CheckArray(b, "array_length", array);
  const std::string out = b->CreateTmpVar("array_length", DataType::kInt64);
  b->AppendOp(MakeOp("lod_array_length", {{"X", {array}}}, {{"Out", {out}}}));
  FindMutableVarDesc(b->main_block(), out)->set_stop_gradient(true);
  return out;
}

REGISTER_LAYER(less_than).With([](LayerSchema& s) -> LayerSchema& {
  return CompareLayer(s, "<", true);
});
REGISTER_LAYER(less_equal).With([](LayerSchema& s) -> LayerSchema& {
  return CompareLayer(s, "<=");
});
REGISTER_LAYER(greater_than).With([](LayerSchema& s) -> LayerSchema& {
  return CompareLayer(s, ">");
});
REGISTER_LAYER(greater_equal).With([](LayerSchema& s) -> LayerSchema& {
  return CompareLayer(s, ">=");
});
REGISTER_LAYER(equal).With([](LayerSchema& s) -> LayerSchema& {
  return CompareLayer(s, "==");
});
REGISTER_LAYER(not_equal).With([](LayerSchema& s) -> LayerSchema& {
  return CompareLayer(s, "!=");
});
REGISTER_LAYER(logical_and).With([](LayerSchema& s) -> LayerSchema& {
  return LogicalLayer(s, "and");
});
REGISTER_LAYER(logical_or).With([](LayerSchema& s) -> LayerSchema& {
  return LogicalLayer(s, "or");
});
REGISTER_LAYER(logical_xor).With([](LayerSchema& s) -> LayerSchema& {
  return LogicalLayer(s, "xor");
});

REGISTER_LAYER(logical_not)
    .Doc("not x, elementwise on a bool var.")
    .Var("x")
    .String("out", "")
    .String("name", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Logical(b, "logical_not", a.Var("x"), "", a.String("out"));
    });

REGISTER_LAYER(increment)
    .Doc("x + value for a one-element x; in place (into x) by default.")
    .Var("x")
    .Float("value", 1.0)
    .Bool("in_place", true)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return Increment(b, a.Var("x"), a.Float("value"), a.Bool("in_place"));
    });

REGISTER_LAYER(is_empty)
    .Doc("Whether x has 0 elements: a bool [1] var (into cond when given).")
    .Var("x")
    .String("cond", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return IsEmpty(b, a.Var("x"), a.String("cond"));
    });

REGISTER_LAYER(create_array)
    .Doc("An empty tensor array of dtype (a LOD_TENSOR_ARRAY var).")
    .String("dtype")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return CreateArray(b, DtypeArg(a, "dtype"));
    });

REGISTER_LAYER(array_write)
    .Doc("array[i] = x; a new array when array is not given.")
    .Var("x")
    .Var("i")
    .String("array", "")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return ArrayWrite(b, a.Var("x"), a.Var("i"), a.String("array"));
    });

REGISTER_LAYER(array_read)
    .Doc("array[i], a copy.")
    .Var("array")
    .Var("i")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return ArrayRead(b, a.Var("array"), a.Var("i"));
    });

REGISTER_LAYER(array_length)
    .Doc("The number of tensors in array, int64 [1].")
    .Var("array")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return ArrayLength(b, a.Var("array"));
    });

namespace {

// The vars `ops` read (or, `writes`, write) that `outer` declares, each
// once, in order of first use.
std::vector<std::string> OuterVars(const proto::BlockDesc& ops,
                                   const proto::BlockDesc& outer, bool writes) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& op : ops.ops())
    for (const auto& n : writes ? OpOutputNames(op) : OpInputNames(op))
      if (FindVarDesc(outer, n) != nullptr && seen.insert(n).second)
        out.push_back(n);
  return out;
}

// Moves block 0's ops from `op_begin` on, but those at the indices in
// `stay` (IfElse's splits of its inputs, run before the block), into a new
// block, child of block 0, with the temporaries declared from `var_begin`
// on, except parameters and the names in `keep` (the block's results, read
// after it, and the splits' parts). Returns the new block's index.
int MoveIntoBlock(ProgramBuilder* b, int64_t op_begin, int64_t var_begin,
                  const std::set<std::string>& keep,
                  const std::set<int64_t>& stay) {
  proto::ProgramDesc* p = b->main();
  proto::BlockDesc* b0 = p->mutable_blocks(0);
  FLUID_ENFORCE(op_begin >= 0 && op_begin < b0->ops_size() && var_begin >= 0 &&
                    var_begin <= b0->vars_size(),
                "conditional block: the block holds no ops (ops ", op_begin,
                " to ", b0->ops_size(), " of block 0)");
  const int idx = p->blocks_size();
  proto::BlockDesc* block = p->add_blocks();
  block->set_idx(idx);
  block->set_parent_idx(0);
  b0 = p->mutable_blocks(0);
  google::protobuf::RepeatedPtrField<proto::OpDesc> outer_ops;
  for (int k = 0; k < b0->ops_size(); ++k) {
    if (k < op_begin || stay.count(k)) {
      *outer_ops.Add() = b0->ops(k);
      continue;
    }
    proto::OpDesc* op = block->add_ops();
    *op = b0->ops(k);
    if (HasOpAttr(*op, "sub_block"))  // a block built inside this one
      p->mutable_blocks(GetOpAttrAs<int32_t>(*op, "sub_block"))
          ->set_parent_idx(idx);
  }
  FLUID_ENFORCE(block->ops_size() > 0,
                "conditional block: the block holds no ops");
  b0->mutable_ops()->Swap(&outer_ops);
  google::protobuf::RepeatedPtrField<proto::VarDesc> kept;
  for (int k = 0; k < b0->vars_size(); ++k) {
    const proto::VarDesc& v = b0->vars(k);
    if (k >= var_begin && !v.persistable() && !keep.count(v.name())) {
      *block->add_vars() = v;
    } else {
      *kept.Add() = v;
    }
  }
  b0->mutable_vars()->Swap(&kept);
  return idx;
}

}  // namespace

std::string BuildWhile(ProgramBuilder* b, int64_t op_begin, int64_t var_begin,
                       const std::string& cond, bool is_test) {
  proto::ProgramDesc* p = b->main();
  proto::BlockDesc* b0 = p->mutable_blocks(0);
  FLUID_ENFORCE(op_begin >= 0 && op_begin < b0->ops_size() && var_begin >= 0 &&
                    var_begin <= b0->vars_size(),
                "While: the loop's block holds no ops (ops ", op_begin, " to ",
                b0->ops_size(), " of block 0)");
  const int idx = p->blocks_size();
  proto::BlockDesc* body = p->add_blocks();
  body->set_idx(idx);
  body->set_parent_idx(0);
  b0 = p->mutable_blocks(0);
  const int n_ops = b0->ops_size() - static_cast<int>(op_begin);
  for (int k = static_cast<int>(op_begin); k < b0->ops_size(); ++k) {
    proto::OpDesc* op = body->add_ops();
    *op = b0->ops(k);
    // A loop built inside this one now lives in this block.
    if (HasOpAttr(*op, "sub_block"))
      p->mutable_blocks(GetOpAttrAs<int32_t>(*op, "sub_block"))
          ->set_parent_idx(idx);
  }
  b0->mutable_ops()->DeleteSubrange(static_cast<int>(op_begin), n_ops);
  google::protobuf::RepeatedPtrField<proto::VarDesc> kept;
  for (int k = 0; k < b0->vars_size(); ++k) {
    const proto::VarDesc& v = b0->vars(k);
    if (k >= var_begin && !v.persistable()) {
      *body->add_vars() = v;
    } else {
      *kept.Add() = v;
    }
  }
  b0->mutable_vars()->Swap(&kept);
  const std::vector<std::string> xs = OuterVars(*body, *b0, false);
  const std::vector<std::string> outs = OuterVars(*body, *b0, true);
  FLUID_ENFORCE(std::find(outs.begin(), outs.end(), cond) != outs.end(),
                "While: the loop's block never writes its condition ",
                Quote(cond),
                ", so the loop would never end; update it at the "
                "end of the block (fluid.layers.less_than(i, n, cond=",
                cond, "))");
  const std::string steps =
      b->CreateTmpVar("while_step_scopes", DataType::kFloat32);
  FindMutableVarDesc(b->main_block(), steps)->set_stop_gradient(true);
  b->AppendOp(
      MakeOp("while", {{"X", xs}, {"Condition", {cond}}},
             {{"Out", outs}, {"StepScopes", {steps}}},
             {{"sub_block", static_cast<int32_t>(idx)}, {"is_test", is_test}}));
  return steps;
}

std::string BuildConditionalBlock(ProgramBuilder* b, int64_t op_begin,
                                  int64_t var_begin,
                                  const std::vector<std::string>& cond,
                                  bool is_scalar_condition,
                                  const std::vector<std::string>& keep,
                                  const std::vector<int64_t>& stay) {
  FLUID_ENFORCE(!cond.empty(), "conditional block: no condition var");
  for (const auto& c : cond) {
    const proto::VarDesc* v = FindVarDesc(*b->main_block(), c);
    FLUID_ENFORCE_CODE(v != nullptr, ErrorCode::kNotFound,
                       "conditional block: condition ", Quote(c),
                       " is no var of the program");
    FLUID_ENFORCE(!is_scalar_condition || VarDtype(*v) == DataType::kBool,
                  "conditional block: condition ", Quote(c), " is ",
                  DataTypeName(VarDtype(*v)), "; it must be a bool var");
  }
  const std::set<std::string> keep_set(keep.begin(), keep.end());
  const int idx = MoveIntoBlock(b, op_begin, var_begin, keep_set,
                                std::set<int64_t>(stay.begin(), stay.end()));
  const proto::BlockDesc& block = b->main()->blocks(idx);
  std::vector<std::string> xs = OuterVars(block, *b->main_block(), false);
  // The op needs an Input: a block reading no outer var (fill_constant
  // into a learning rate) lists its condition, which has no gradient.
  if (xs.empty()) xs = cond;
  const std::vector<std::string> outs =
      OuterVars(block, *b->main_block(), true);
  for (const auto& c : cond)
    FLUID_ENFORCE(std::find(outs.begin(), outs.end(), c) == outs.end(),
                  "conditional block: the block writes its own condition ",
                  Quote(c), "; compute the condition before the block");
  const std::string scope =
      b->CreateTmpVar("conditional_block_scope", DataType::kFloat32);
  FindMutableVarDesc(b->main_block(), scope)->set_stop_gradient(true);
  b->AppendOp(MakeOp("conditional_block", {{"Cond", cond}, {"Input", xs}},
                     {{"Out", outs}, {"Scope", {scope}}},
                     {{"sub_block", static_cast<int32_t>(idx)},
                      {"is_scalar_condition", is_scalar_condition}}));
  return scope;
}

std::vector<std::string> SplitLoDTensor(ProgramBuilder* b,
                                        const std::string& input,
                                        const std::string& mask) {
  const proto::VarDesc& x = VarOf(b, "IfElse.input", "x", input);
  const proto::VarDesc& m = VarOf(b, "IfElse", "cond", mask);
  FLUID_ENFORCE(VarDtype(m) == DataType::kBool, "IfElse: the condition ",
                Quote(mask), " is ", DataTypeName(VarDtype(m)),
                "; it must be a bool var, one per row");
  const DataType d = VarDtype(x);
  const std::string t = b->CreateTmpVar("split_lod_tensor_true", d);
  const std::string f = b->CreateTmpVar("split_lod_tensor_false", d);
  b->AppendOp(MakeOp("split_lod_tensor", {{"X", {input}}, {"Mask", {mask}}},
                     {{"OutTrue", {t}}, {"OutFalse", {f}}},
                     {{"level", static_cast<int32_t>(0)}}));
  return {t, f};
}

std::string MergeLoDTensor(ProgramBuilder* b, const std::string& in_true,
                           const std::string& in_false, const std::string& x,
                           const std::string& mask) {
  const proto::VarDesc& t = VarOf(b, "IfElse", "output", in_true);
  const proto::VarDesc& f = VarOf(b, "IfElse", "output", in_false);
  FLUID_ENFORCE(VarDtype(t) == VarDtype(f), "IfElse: the true block's output ",
                Quote(in_true), " is ", DataTypeName(VarDtype(t)),
                " and the false block's ", Quote(in_false), " is ",
                DataTypeName(VarDtype(f)), "; they must match");
  const std::string out = b->CreateTmpVar("merge_lod_tensor", VarDtype(t));
  b->AppendOp(MakeOp("merge_lod_tensor",
                     {{"X", {x}},
                      {"Mask", {mask}},
                      {"InTrue", {in_true}},
                      {"InFalse", {in_false}}},
                     {{"Out", {out}}}, {{"level", static_cast<int32_t>(0)}}));
  return out;
}

}  // namespace layers
}  // namespace fluid
