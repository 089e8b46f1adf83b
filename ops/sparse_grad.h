// The optimizers' sparse path (CPU): a Grad holding sparse rows
// (SelectedRows, from lookup_table with is_sparse) is merged (copies of a
// row summed in the order they were listed, rows ascending: the same bits
// on every run) and applied row by row. Two disciplines:
//
//   lazy      only the rows the gradient touches are updated (sgd, adagrad,
//             whose update is the identity for a zero gradient anyway, and
//             adam with lazy_mode);
//   non-lazy  every row is updated, a row the gradient misses as if its
//             gradient were zero (momentum, adam without lazy_mode): the
//             same result as the dense gradient.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// True when the op's Grad holds sparse rows.
inline bool HasSparseGrad(const ExecutionContext& ctx) {
  return ctx.InputVar("Grad")->IsSelectedRows();
}

// The sparse Grad, checked against Param (rows within its height, rows of
// its width, its dtype) and merged into host memory.
template <typename T>
struct MergedGrad {
  RowMerge merge;
  std::vector<T> values;  // merge.size() rows of `width`
  int64_t width = 0;
  int64_t height = 0;
};

// The calling thread's MergedGrad: reused from step to step, so its vectors
// keep their capacity and a steady run allocates nothing.
template <typename T>
MergedGrad<T>& ThreadMergedGrad() {
  thread_local MergedGrad<T> m;
  return m;
}

// The sparse Grad, checked to stand for a tensor shaped like Param with
// every row inside it. The messages are built only when a check fails.
inline const SelectedRows& CheckedSparseGrad(const ExecutionContext& ctx) {
  const SelectedRows& sr = ctx.InputVar("Grad")->Get<SelectedRows>();
  const Tensor& param = ctx.Input("Param");
  const int64_t height = sr.height();
  if (sr.dense_shape() == param.shape() &&
      std::all_of(sr.rows().begin(), sr.rows().end(),
                  [height](int64_t r) { return r >= 0 && r < height; }))
    return sr;
  const std::string what =
      ctx.type() + ": Grad '" + ctx.InputName("Grad") + "'";
  FLUID_ENFORCE(sr.dense_shape() == param.shape(), what, " stands for shape ",
                sr.dense_shape(), " but Param '", ctx.InputName("Param"),
                "' has shape ", param.shape());
  CheckRowsInRange(sr, what);
  return sr;
}

template <typename T>
void MergeSparseGrad(const ExecutionContext& ctx, MergedGrad<T>* out) {
  const SelectedRows& sr = CheckedSparseGrad(ctx);
  out->merge.Build(sr.rows());
  out->width = sr.row_width();
  out->height = sr.height();
  const T* v = sr.value().data<T>();
  const int64_t w = out->width;
  out->values.assign(out->merge.size() * w, T(0));
  for (int64_t k = 0; k < out->merge.size(); ++k) {
    T* dst = out->values.data() + k * w;
    for (int64_t c = out->merge.offsets[k]; c < out->merge.offsets[k + 1]; ++c)
      for (int64_t j = 0; j < w; ++j) dst[j] += v[out->merge.order[c] * w + j];
  }
}

// Calls fn(i, g) for element i of Param and its merged gradient g: the
// touched rows only (lazy) or every row, g = 0 where untouched.
template <typename T, typename Fn>
void ForEachSparseElement(const MergedGrad<T>& m, bool lazy, Fn fn) {
  const int64_t w = m.width;
  if (lazy) {
    for (int64_t k = 0; k < m.merge.size(); ++k) {
      const int64_t base = m.merge.unique_rows[k] * w;
      for (int64_t j = 0; j < w; ++j) fn(base + j, m.values[k * w + j]);
    }
    return;
  }
  int64_t k = 0;
  for (int64_t r = 0; r < m.height; ++r) {
    const bool hit = k < m.merge.size() && m.merge.unique_rows[k] == r;
    for (int64_t j = 0; j < w; ++j)
      fn(r * w + j, hit ? m.values[k * w + j] : T(0));
    if (hit) ++k;
  }
}

// The output `out_slot` holding `in_slot`'s values, for an update that
// writes only some elements: a copy unless the output is the input.
template <typename T>
T* UpdatedInPlace(const ExecutionContext& ctx, const std::string& in_slot,
                  const std::string& out_slot) {
  const Tensor& in = ctx.Input(in_slot);
  Tensor* out = ctx.Output(out_slot);
  if (out->initialized() && out->buffer() == in.buffer() &&
      out->offset() == in.offset())
    return out->data<T>();
  const T* src = in.data<T>();
  T* dst = out->mutable_data<T>(in.shape());
  std::copy_n(src, in.numel(), dst);
  return dst;
}

}  // namespace ops
}  // namespace fluid
