// Ops that take a sparse gradient (SelectedRows, from lookup_table with
// is_sparse) where they take a dense one and act on its values as on the
// dense tensor it stands for: clip, clip_by_norm, squared_l2_norm,
// elementwise_mul by a one-element Y, and sparse_weight_decay. Out keeps
// X's rows and height (the same var when the op runs in place).
//
// A clip, a norm or a decay of a row depends on the row's whole gradient,
// not on how it is split into copies, so these ops take rows listed once
// each (merge_selected_rows first): then the result is the dense op's
// restricted to the rows the gradient touches, and an untouched row, whose
// dense gradient is zero, is left alone. elementwise_mul, linear, takes any
// rows. Free of Eigen, so that the CUDA kernels include it too.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// Shape inference: `out` holds sparse rows when `in` does.
inline void ShareSparse(InferShapeContext* ctx, const std::string& in,
                        const std::string& out) {
  if (ctx->IsSelectedRowsInput(in)) ctx->SetOutputSelectedRows(out);
}

inline bool IsSparseInput(const ExecutionContext& ctx,
                          const std::string& slot) {
  return ctx.InputVar(slot)->IsSelectedRows();
}

// "<op>: <slot> '<var>'", for messages about a sparse input.
inline std::string SparseInputWhat(const ExecutionContext& ctx,
                                   const std::string& slot) {
  return ctx.type() + ": " + slot + " '" + ctx.InputName(slot) + "'";
}

// Checks that sparse input `slot` (held in `sr`) lists no row twice and
// every row within its height. Rows in ascending order
// (merge_selected_rows' and c_sparse_allreduce's) are checked in one pass,
// others on a sorted copy; the messages are built only when a check fails.
inline void CheckDistinctRows(const ExecutionContext& ctx,
                              const std::string& slot, const SelectedRows& sr) {
  const std::vector<int64_t>& rows = sr.rows();
  if (rows.empty()) return;
  if (std::adjacent_find(rows.begin(), rows.end(), std::greater_equal<>()) ==
          rows.end() &&
      rows.front() >= 0 && rows.back() < sr.height())
    return;
  CheckRowsInRange(sr, SparseInputWhat(ctx, slot));
  std::vector<int64_t> sorted = rows;
  std::sort(sorted.begin(), sorted.end());
  auto twice = std::adjacent_find(sorted.begin(), sorted.end());
  FLUID_ENFORCE(twice == sorted.end(), SparseInputWhat(ctx, slot),
                " lists row ", *twice, " more than once; merge its copies ",
                "first (merge_selected_rows), as a clip, norm or decay of a ",
                "row needs the row's whole gradient");
}

// The values of sparse input `in` and of output `out`, whose rows and
// height become `in`'s (nothing to copy when `out` is `in`). `distinct`:
// `in`'s rows must be listed once each, within its height (see above).
struct SparseInOut {
  const Tensor& x;
  Tensor* out;
};
inline SparseInOut SparseValues(const ExecutionContext& ctx,
                                const std::string& in, const std::string& out,
                                bool distinct) {
  const SelectedRows& x = ctx.InputVar(in)->Get<SelectedRows>();
  if (distinct) CheckDistinctRows(ctx, in, x);
  SelectedRows* o = ctx.OutputVar(out)->GetMutableSelectedRows();
  if (o != &x) {
    o->set_height(x.height());
    *o->mutable_rows() = x.rows();
  }
  return {x.value(), o->mutable_value()};
}

// Input `slot`'s tensor, or its values when it holds sparse rows (listed
// once each), for an op whose output does not keep the rows.
inline const Tensor& DistinctRowsOrTensor(const ExecutionContext& ctx,
                                          const std::string& slot) {
  if (!IsSparseInput(ctx, slot)) return ctx.Input(slot);
  const SelectedRows& sr = ctx.InputVar(slot)->Get<SelectedRows>();
  CheckDistinctRows(ctx, slot, sr);
  return sr.value();
}

// The one-element input `slot` that multiplies sparse rows (elementwise_mul
// of a sparse X: a broadcast along X's rows would depend on which rows the
// gradient lists).
inline const Tensor& SparseScaleFactor(const ExecutionContext& ctx,
                                       const std::string& slot) {
  const Tensor& y = ctx.Input(slot);
  FLUID_ENFORCE(y.numel() == 1, ctx.type(), ": X '", ctx.InputName("X"),
                "' holds sparse rows, so ", slot, " '", ctx.InputName(slot),
                "' must hold one element, has shape ", y.shape());
  return y;
}

}  // namespace ops
}  // namespace fluid
