// The layers of a loop over a batch of sequences (Fluid 1.x's DynamicRNN
// is built from them): lod_rank_table, max_sequence_len,
// lod_tensor_to_array, array_to_lod_tensor, shrink_memory and
// reorder_lod_tensor_by_rank (lod_layers.cc; Python: layers_lod.py); and
// lod_reset and lod_append, which give a tensor new LoD offsets. A
// rank table var is declared int64 [-1, 2] and holds a LoDRankTable at run
// time (src/framework/lod_rank_table.h); the layers reading one check that
// lod_rank_table wrote it.
#pragma once

#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

// The rank table of x's sequences (level 0 only).
std::string LoDRankTableLayer(ProgramBuilder* b, const std::string& x,
                              int64_t level);
// int64 [1]: the longest sequence length of `table`.
std::string MaxSequenceLen(ProgramBuilder* b, const std::string& table);
// x's sequences as an array of loop steps (a LOD_TENSOR_ARRAY var).
std::string LoDTensorToArray(ProgramBuilder* b, const std::string& x,
                             const std::string& table);
// The steps of array x merged back into sequences (a LoD tensor).
std::string ArrayToLoDTensor(ProgramBuilder* b, const std::string& x,
                             const std::string& table);
// The first rows of x, one per sequence of `table` longer than step i.
std::string ShrinkMemory(ProgramBuilder* b, const std::string& x,
                         const std::string& i, const std::string& table);
// x's sequences (rows without LoD) in the table's order.
std::string ReorderLoDTensorByRank(ProgramBuilder* b, const std::string& x,
                                   const std::string& table);

// x's data with new LoD offsets: y's LoD, or y's data (int32/int64
// offsets) when y has none, or `target_lod` when y is empty (Fluid's
// lod_reset; one of the two must be given).
std::string LoDReset(ProgramBuilder* b, const std::string& x,
                     const std::string& y,
                     const std::vector<int64_t>& target_lod);
// x's data with the offsets `level` (lod_append; `level_var`, a var of
// offsets, when not empty). x must have no LoD: a tensor carries one level
// here.
std::string LoDAppend(ProgramBuilder* b, const std::string& x,
                      const std::vector<int64_t>& level,
                      const std::string& level_var = "");

}  // namespace layers
}  // namespace fluid
