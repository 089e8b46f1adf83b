// A LoDRankTable: the value of the var lod_rank_table writes, the
// sequences of a LoD tensor as (index, length) items, sorted by length
// longest first (sequences of one length keep their order). The ops of a
// loop over sequences (lod_tensor_to_array, array_to_lod_tensor,
// shrink_rnn_memory, reorder_lod_tensor_by_rank, max_sequence_len) read
// it. A Variable holds one like any other value (Variable::GetMutable); its
// VarDesc is an int64 [-1, 2] tensor (the items) so that compile-time
// passes treat it as a plain var, and the ops reading it check at run time
// that it holds a table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/framework/scope.h"

namespace fluid {

struct LoDRankItem {
  int64_t index;   // the sequence's position in the LoD
  int64_t length;  // its number of rows
};

struct LoDRankTable {
  std::vector<LoDRankItem> items;

  // How many sequences are longer than `step` (those still running at
  // loop step `step`): a prefix of the items.
  int64_t RunningAt(int64_t step) const {
    int64_t n = 0;
    while (n < static_cast<int64_t>(items.size()) && items[n].length > step)
      ++n;
    return n;
  }
};

// The table `var` holds, made in place of nothing or of a tensor that never
// got memory (shape inference may have sized one).
inline LoDRankTable* MutableRankTable(Variable* var) {
  if (var->HasValue() && var->IsTensor() && !var->GetTensor().initialized())
    *var = Variable();
  return var->GetMutable<LoDRankTable>();
}

}  // namespace fluid
