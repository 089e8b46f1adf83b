// The layers of a loop over a batch of sequences (lod_layers.h).
#include "src/builder/lod_layers.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "src/builder/layer_registry.h"
#include "src/builder/layers.h"
#include "src/framework/lod.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace layers {
namespace {

const proto::VarDesc& LayerVar(ProgramBuilder* b, const std::string& layer,
                               const std::string& arg,
                               const std::string& name) {
  const proto::VarDesc* v = FindVarDesc(*b->main_block(), name);
  FLUID_ENFORCE_CODE(v != nullptr, ErrorCode::kNotFound, "layer ", Quote(layer),
                     ": argument ", Quote(arg), ": no variable ", Quote(name),
                     " in the program");
  return *v;
}

// Checks that `name` (argument `arg` of `layer`) is a rank table: a var
// some lod_rank_table op of the program writes.
void CheckTable(ProgramBuilder* b, const std::string& layer,
                const std::string& arg, const std::string& name) {
  LayerVar(b, layer, arg, name);
  for (const proto::BlockDesc& block : b->main()->blocks())
    for (const proto::OpDesc& op : block.ops())
      if (op.type() == "lod_rank_table")
        for (const std::string& out : OpOutputNames(op))
          if (out == name) return;
  FLUID_THROW(ErrorCode::kInvalidArgument, "layer ", Quote(layer),
              ": argument ", Quote(arg), ": ", Quote(name),
              " is not a rank table; make one with "
              "fluid.layers.lod_rank_table(x)");
}

void CheckArrayVar(ProgramBuilder* b, const std::string& layer,
                   const std::string& name) {
  const proto::VarDesc& v = LayerVar(b, layer, "x", name);
  FLUID_ENFORCE(v.type() == proto::VarDesc::LOD_TENSOR_ARRAY, "layer ",
                Quote(layer), ": argument 'x': ", Quote(name),
                " is not a tensor array (fluid.layers.lod_tensor_to_array "
                "or create_array)");
}

std::string Tmp(ProgramBuilder* b, const std::string& layer,
                const std::string& like) {
  return b->CreateTmpVar(layer, VarDtype(LayerVar(b, layer, "x", like)));
}

}  // namespace

std::string LoDRankTableLayer(ProgramBuilder* b, const std::string& x,
                              int64_t level) {
  LayerVar(b, "lod_rank_table", "x", x);
  FLUID_ENFORCE(level == 0, "layer 'lod_rank_table': argument 'level' is ",
                level,
                "; only level 0 is supported (tensors here carry one "
                "level of LoD)");
  const std::string out = b->CreateTmpVar("lod_rank_table", DataType::kInt64);
  FindMutableVarDesc(b->main_block(), out)->set_stop_gradient(true);
  b->AppendOp(MakeOp("lod_rank_table", {{"X", {x}}}, {{"Out", {out}}},
                     {{"level", static_cast<int32_t>(level)}}));
  return out;
}

std::string MaxSequenceLen(ProgramBuilder* b, const std::string& table) {
  CheckTable(b, "max_sequence_len", "rank_table", table);
  const std::string out = b->CreateTmpVar("max_sequence_len", DataType::kInt64);
  FindMutableVarDesc(b->main_block(), out)->set_stop_gradient(true);
  b->AppendOp(
      MakeOp("max_sequence_len", {{"RankTable", {table}}}, {{"Out", {out}}}));
  return out;
}

std::string LoDTensorToArray(ProgramBuilder* b, const std::string& x,
                             const std::string& table) {
  CheckTable(b, "lod_tensor_to_array", "table", table);
  const std::string out = Tmp(b, "lod_tensor_to_array", x);
  FindMutableVarDesc(b->main_block(), out)
      ->set_type(proto::VarDesc::LOD_TENSOR_ARRAY);
  b->AppendOp(MakeOp("lod_tensor_to_array",
                     {{"X", {x}}, {"RankTable", {table}}}, {{"Out", {out}}}));
  return out;
}

std::string ArrayToLoDTensor(ProgramBuilder* b, const std::string& x,
                             const std::string& table) {
  CheckArrayVar(b, "array_to_lod_tensor", x);
  CheckTable(b, "array_to_lod_tensor", "table", table);
  const std::string out = Tmp(b, "array_to_lod_tensor", x);
  b->AppendOp(MakeOp("array_to_lod_tensor",
                     {{"X", {x}}, {"RankTable", {table}}}, {{"Out", {out}}}));
  return out;
}

std::string ShrinkMemory(ProgramBuilder* b, const std::string& x,
                         const std::string& i, const std::string& table) {
  LayerVar(b, "shrink_memory", "i", i);
  CheckTable(b, "shrink_memory", "table", table);
  const std::string out = Tmp(b, "shrink_memory", x);
  b->AppendOp(MakeOp("shrink_rnn_memory",
                     {{"X", {x}}, {"I", {i}}, {"RankTable", {table}}},
                     {{"Out", {out}}}));
  return out;
}

std::string ReorderLoDTensorByRank(ProgramBuilder* b, const std::string& x,
                                   const std::string& table) {
  CheckTable(b, "reorder_lod_tensor_by_rank", "rank_table", table);
  const std::string out = Tmp(b, "reorder_lod_tensor_by_rank", x);
  b->AppendOp(MakeOp("reorder_lod_tensor_by_rank",
                     {{"X", {x}}, {"RankTable", {table}}}, {{"Out", {out}}}));
  return out;
}

namespace {

// The offsets as lod_reset's target_lod attr, checked where the build can.
std::vector<int32_t> TargetLoDAttr(const std::string& layer,
                                   const std::vector<int64_t>& lod) {
  FLUID_ENFORCE(lod.size() >= 2 && lod.front() == 0, "layer ", Quote(layer),
                ": the offsets ", LoDToString(lod),
                " must start at 0 and hold at least [0, rows]");
  std::vector<int32_t> out;
  for (size_t i = 0; i < lod.size(); ++i) {
    FLUID_ENFORCE(i == 0 || lod[i] >= lod[i - 1], "layer ", Quote(layer),
                  ": the offsets ", LoDToString(lod), " decrease at index ", i);
    FLUID_ENFORCE(lod[i] <= INT32_MAX, "layer ", Quote(layer), ": offset ",
                  lod[i], " exceeds int32 (the op's target_lod)");
    out.push_back(static_cast<int32_t>(lod[i]));
  }
  return out;
}

std::string AppendLoDReset(ProgramBuilder* b, const std::string& layer,
                           const std::string& x, const std::string& y,
                           const std::vector<int64_t>& lod, bool append) {
  LayerVar(b, layer, "x", x);
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"X", {x}}};
  AttributeMap attrs = {{"append", append}};
  if (!y.empty()) {
    LayerVar(b, layer, append ? "level" : "y", y);
    in.push_back({"Y", {y}});
  } else {
    attrs["target_lod"] = TargetLoDAttr(layer, lod);
  }
  const std::string out = Tmp(b, layer, x);
  b->AppendOp(MakeOp("lod_reset", in, {{"Out", {out}}}, attrs));
  return out;
}

}  // namespace

std::string LoDReset(ProgramBuilder* b, const std::string& x,
                     const std::string& y,
                     const std::vector<int64_t>& target_lod) {
  FLUID_ENFORCE(!y.empty() || !target_lod.empty(),
                "layer 'lod_reset': give y or target_lod (the new LoD)");
  return AppendLoDReset(b, "lod_reset", x, y, target_lod, false);
}

std::string LoDAppend(ProgramBuilder* b, const std::string& x,
                      const std::vector<int64_t>& level,
                      const std::string& level_var) {
  return AppendLoDReset(b, "lod_append", x, level_var, level, true);
}

REGISTER_LAYER(lod_reset)
    .Doc("x's data with y's LoD, the offsets y holds, or target_lod.")
    .Var("x")
    .String("y", "")
    .IntList("target_lod", {})
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return LoDReset(b, a.Var("x"), a.String("y"), a.IntList("target_lod"));
    });

REGISTER_LAYER(lod_append)
    .Doc("x (without LoD) with the LoD offsets level.")
    .Var("x")
    .IntList("level")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return LoDAppend(b, a.Var("x"), a.IntList("level"));
    });

// lod_append with a var of offsets for level (Python's lod_append calls it).
REGISTER_LAYER(_lod_append_var)
    .Doc("x (without LoD) with the LoD offsets the var level holds.")
    .Var("x")
    .Var("level")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return LoDAppend(b, a.Var("x"), {}, a.Var("level"));
    });

REGISTER_LAYER(lod_rank_table)
    .Doc("The rank table of x's sequences: (index, length), longest first.")
    .Var("x")
    .Int("level", 0)
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return LoDRankTableLayer(b, a.Var("x"), a.Int("level"));
    });

REGISTER_LAYER(max_sequence_len)
    .Doc("int64 [1]: the longest sequence length of rank_table.")
    .Var("rank_table")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return MaxSequenceLen(b, a.Var("rank_table"));
    });

REGISTER_LAYER(lod_tensor_to_array)
    .Doc("x's sequences as an array of loop steps, in table's order.")
    .Var("x")
    .Var("table")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return LoDTensorToArray(b, a.Var("x"), a.Var("table"));
    });

REGISTER_LAYER(array_to_lod_tensor)
    .Doc("The steps of array x merged back into sequences.")
    .Var("x")
    .Var("table")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return ArrayToLoDTensor(b, a.Var("x"), a.Var("table"));
    });

REGISTER_LAYER(shrink_memory)
    .Doc("The first rows of x, one per sequence longer than step i.")
    .Var("x")
    .Var("i")
    .Var("table")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return ShrinkMemory(b, a.Var("x"), a.Var("i"), a.Var("table"));
    });

REGISTER_LAYER(reorder_lod_tensor_by_rank)
    .Doc("x's sequences (rows without LoD) in rank_table's order.")
    .Var("x")
    .Var("rank_table")
    .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
      return ReorderLoDTensorByRank(b, a.Var("x"), a.Var("rank_table"));
    });

}  // namespace layers
}  // namespace fluid
