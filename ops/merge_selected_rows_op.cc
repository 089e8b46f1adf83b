// merge_selected_rows: Out = X's sparse rows with each row listed once,
// ascending, the copies of a row summed in the order X lists them (Fluid's
// merge_selected_rows; the order of ops/sparse_grad.h, so that an optimizer
// merging Out again gets the same bits). Out stands for the same dense
// tensor as X; only its split into rows changes, so that an op acting on a
// row's whole gradient (a clip, a norm, a weight decay: ops/sparse_values.h)
// can follow. Out is normally X itself. Rows listed once in ascending order
// already (c_sparse_allreduce's) are left as they are. Not differentiable:
// X is a gradient.
#include "ops/merge_selected_rows_op.h"

#include <algorithm>
#include <functional>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

const SelectedRows& MergeInput(const ExecutionContext& ctx) {
  const Variable* v = ctx.InputVar("X");
  FLUID_ENFORCE(v->IsSelectedRows(), "merge_selected_rows: X '",
                ctx.InputName("X"),
                "' is a dense tensor; it takes sparse rows (SELECTED_ROWS) "
                "only");
  const SelectedRows& x = v->Get<SelectedRows>();
  const std::vector<int64_t>& rows = x.rows();
  // The message is built only when a row is out of range.
  if (!std::all_of(rows.begin(), rows.end(),
                   [&x](int64_t r) { return r >= 0 && r < x.height(); }))
    CheckRowsInRange(x, "merge_selected_rows: X '" + ctx.InputName("X") + "'");
  const Shape& s = x.value().shape();
  FLUID_ENFORCE(s.rank() >= 1 && s[0] == static_cast<int64_t>(rows.size()),
                "merge_selected_rows: X '", ctx.InputName("X"), "' lists ",
                rows.size(), " rows but its values have shape ", s);
  return x;
}

bool RowsMerged(const std::vector<int64_t>& rows) {
  return std::adjacent_find(rows.begin(), rows.end(), std::greater_equal<>()) ==
         rows.end();
}

void PassMergedRows(const ExecutionContext& ctx, const SelectedRows& x) {
  SelectedRows* out = ctx.OutputVar("Out")->GetMutableSelectedRows();
  if (out == &x) return;
  out->set_height(x.height());
  *out->mutable_rows() = x.rows();
  out->mutable_value()->CopyFrom(x.value(), ctx.place());
}

Shape MergedShape(const SelectedRows& x, const RowMerge& merge) {
  Shape s = x.value().shape();
  s[0] = merge.size();
  return s;
}

void SetMergedRows(const ExecutionContext& ctx, const SelectedRows& x,
                   const RowMerge& merge, Tensor* values) {
  SelectedRows* out = ctx.OutputVar("Out")->GetMutableSelectedRows();
  out->set_height(x.height());
  *out->mutable_rows() = merge.unique_rows;
  *out->mutable_value() = std::move(*values);
}

namespace {

void MergeInferShape(InferShapeContext* ctx) {
  FLUID_ENFORCE(ctx->IsSelectedRowsInput("X"), "merge_selected_rows: X '",
                ctx->InputName("X"),
                "' is a dense tensor; it takes sparse rows (SELECTED_ROWS), "
                "such as the gradient of embedding(is_sparse=True)");
  ctx->SetOutputSelectedRows("Out");
  ctx->SetOutputShape("Out", ctx->GetInputShape("X"));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
}

template <typename T>
void MergeKernel(const ExecutionContext& ctx) {
  const SelectedRows& x = MergeInput(ctx);
  if (RowsMerged(x.rows())) return PassMergedRows(ctx, x);
  RowMerge merge;
  merge.Build(x.rows());
  Tensor merged;
  T* dst = merged.mutable_data<T>(MergedShape(x, merge));
  const int64_t w = x.row_width();
  std::fill_n(dst, merged.numel(), T(0));
  const T* v = x.value().data<T>();
  for (int64_t k = 0; k < merge.size(); ++k) {
    T* row = dst + k * w;
    for (int64_t c = merge.offsets[k]; c < merge.offsets[k + 1]; ++c)
      for (int64_t j = 0; j < w; ++j) row[j] += v[merge.order[c] * w + j];
  }
  SetMergedRows(ctx, x, merge, &merged);
}

}  // namespace

REGISTER_OP(merge_selected_rows)
    .Doc("Out = X's sparse rows with each row listed once, ascending.")
    .Input("X", "sparse rows (SELECTED_ROWS), a row possibly listed twice")
    .Output("Out", "the same dense tensor as rows listed once; normally X")
    .SetInferShape(MergeInferShape)
    .CPUKernel<float>(MergeKernel<float>)
    .CPUKernel<double>(MergeKernel<double>);

}  // namespace ops
}  // namespace fluid
