// What nce and hierarchical_sigmoid share for the gradient of their weight
// tables, whose rows a batch touches sparsely (the true and sampled classes;
// the tree nodes on the labels' paths): the touched rows merged (RowMerge,
// rows ascending, each row's copies in batch order) and each touched row's
// gradient summed in that order, so the dense and the sparse gradient hold
// the same bits, run after run, on either place. Free of Eigen so that the
// CUDA kernels can include it.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "src/framework/operator.h"
#include "src/framework/selected_rows.h"

namespace fluid {
namespace ops {

// The entries of a batch, flattened to [n], that touch a row of a table.
struct TouchedRows {
  std::vector<int64_t> positions;  // entries that touch a row, ascending
  std::vector<int64_t> rows;       // the row each of them touches
  RowMerge merge;                  // of `rows`
};

// From `index` [n]: the row of the table entry p touches (negative: none).
inline TouchedRows CollectTouchedRows(const int64_t* index, int64_t n) {
  TouchedRows t;
  for (int64_t p = 0; p < n; ++p) {
    if (index[p] < 0) continue;
    t.positions.push_back(p);
    t.rows.push_back(index[p]);
  }
  t.merge.Build(t.rows);
  return t;
}

// Where the gradient of a [height, width...] table goes: a SelectedRows
// holding the touched rows (sparse) or the dense tensor. `values` is
// allocated at the kernel's place and NOT zeroed; the merged row k goes to
// row dst_rows[k] of it.
template <typename T>
struct TableGrad {
  T* values = nullptr;
  int64_t numel = 0;
  std::vector<int64_t> dst_rows;
};

template <typename T>
TableGrad<T> AllocTableGrad(const ExecutionContext& ctx,
                            const std::string& slot, const Shape& table,
                            const RowMerge& m, bool sparse) {
  TableGrad<T> g;
  const int64_t width = table.Product(1, table.rank());
  if (sparse) {
    SelectedRows* sr = ctx.OutputVar(slot)->GetMutableSelectedRows();
    *sr->mutable_rows() = m.unique_rows;
    sr->set_height(table[0]);
    Shape value = table;
    value[0] = m.size();
    g.values = sr->mutable_value()->mutable_data<T>(value, ctx.place());
    g.numel = m.size() * width;
    g.dst_rows.resize(m.size());
    for (int64_t k = 0; k < m.size(); ++k) g.dst_rows[k] = k;
  } else {
    Tensor* t = ctx.Output(slot);
    g.values = t->mutable_data<T>(table, ctx.place());
    g.numel = t->numel();
    g.dst_rows = m.unique_rows;
  }
  return g;
}

// For merged rows k in [k_begin, k_end): dst row dst_rows[k] += the sum
// over its copies (entries p, ascending) of coef[p] * x[p / per_row, :]
// (host memory; x null: coef[p] alone, a width-1 table such as a bias).
template <typename T>
void AccumulateTouchedRows(const TouchedRows& t,
                           const std::vector<int64_t>& dst_rows, const T* coef,
                           const T* x, int64_t width, int64_t per_row, T* dst,
                           int64_t k_begin, int64_t k_end) {
  const RowMerge& m = t.merge;
  for (int64_t k = k_begin; k < k_end; ++k) {
    T* out = dst + dst_rows[k] * width;
    for (int64_t c = m.offsets[k]; c < m.offsets[k + 1]; ++c) {
      const int64_t p = t.positions[m.order[c]];
      const T g = coef[p];
      if (x == nullptr) {
        out[0] += g;
        continue;
      }
      const T* xr = x + (p / per_row) * width;
      for (int64_t j = 0; j < width; ++j) out[j] += g * xr[j];
    }
  }
}

}  // namespace ops
}  // namespace fluid
