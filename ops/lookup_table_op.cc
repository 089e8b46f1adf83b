// lookup_table: Out[i, :] = W[Ids[i], :], the rows of the embedding table W
// [V, D] picked by the int64 ids (Fluid's lookup_table). Ids is [N, 1] or
// [N] (Out [N, D]), or [..., 1] (Out [..., D]). An id equal to padding_idx
// reads as a zero row and sends no gradient; any other id outside [0, V)
// is an error naming the op, Ids and the id, never a read out of bounds.
//
// W@GRAD is dense ([V, D], zero where no id points) or, with is_sparse, a
// SelectedRows holding one row per id (repeats kept, padding ids dropped)
// with the matching rows of Out@GRAD: the optimizers apply it row-wise and
// the collective transpiler gathers it instead of allreducing V * D values.
#include "ops/lookup_table_op.h"

#include <algorithm>
#include <string>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

LookupArgs CheckLookup(const ExecutionContext& ctx, const Tensor& host_ids) {
  const Tensor& w = ctx.Input("W");
  LookupArgs a;
  a.height = w.shape()[0];
  a.width = w.shape().Product(1, w.shape().rank());
  a.padding = ctx.Attr<int64_t>("padding_idx");
  a.ids = host_ids.data<int64_t>();
  a.num_ids = host_ids.numel();
  for (int64_t i = 0; i < a.num_ids; ++i) {
    const int64_t id = a.ids[i];
    if (id == a.padding && a.padding != kNoPadding) continue;
    FLUID_ENFORCE(id >= 0 && id < a.height, ctx.type(), ": Ids '",
                  ctx.InputName("Ids"), "' holds id ", id, " at position ", i,
                  ", outside [0, ", a.height, ") (the rows of W '",
                  ctx.InputName("W"), "')");
  }
  return a;
}

void KeptIds(const LookupArgs& a, std::vector<int64_t>* positions,
             std::vector<int64_t>* rows) {
  positions->clear();
  rows->clear();
  for (int64_t i = 0; i < a.num_ids; ++i) {
    if (a.padding != kNoPadding && a.ids[i] == a.padding) continue;
    positions->push_back(i);
    rows->push_back(a.ids[i]);
  }
}

namespace {

// Ids [N] or [..., 1] -> Out [N, D] or [..., D].
Shape LookupOutShape(InferShapeContext* ctx, const Shape& w) {
  Shape ids = ctx->GetInputShape("Ids");
  const std::string& name = ctx->InputName("Ids");
  FLUID_ENFORCE(ctx->GetInputDtype("Ids") == DataType::kInt64, ctx->op_type(),
                ": Ids '", name, "' must be int64, got ",
                DataTypeName(ctx->GetInputDtype("Ids")));
  FLUID_ENFORCE(
      ids.rank() == 1 || (ids.rank() >= 2 && (ids[ids.rank() - 1] == 1 ||
                                              ids[ids.rank() - 1] < 0)),
      ctx->op_type(), ": Ids '", name, "' must be [N] or [..., 1], got ", ids);
  if (ids.rank() == 1) ids.push_back(1);
  ids[ids.rank() - 1] = w.rank() == 2 ? w[1] : -1;
  return ids;
}

void CheckTable(InferShapeContext* ctx) {
  Shape w = ctx->GetInputShape("W");
  FLUID_ENFORCE(w.rank() == 2, ctx->op_type(), ": W '", ctx->InputName("W"),
                "' must be a [rows, width] table, got ", w);
  const int64_t pad = ctx->Attr<int64_t>("padding_idx");
  FLUID_ENFORCE(pad == kNoPadding || (pad >= 0 && (w[0] < 0 || pad < w[0])),
                ctx->op_type(), ": padding_idx ", pad, " of W '",
                ctx->InputName("W"), "' must be -1 (none) or in [0, ", w[0],
                ")");
}

void LookupTableInferShape(InferShapeContext* ctx) {
  CheckTable(ctx);
  ctx->SetOutputShape("Out", LookupOutShape(ctx, ctx->GetInputShape("W")));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("W"));
  ctx->ShareLoD("Ids", "Out");  // a row of Out per row of Ids
}

void LookupTableGradInferShape(InferShapeContext* ctx) {
  CheckTable(ctx);
  if (!ctx->HasOutput(GradVarName("W"))) return;
  if (ctx->Attr<bool>("is_sparse"))
    ctx->SetOutputSelectedRows(GradVarName("W"));
  ctx->ShareShape("W", GradVarName("W"));
}

template <typename T>
void LookupTableKernel(const ExecutionContext& ctx) {
  const LookupArgs a = CheckLookup(ctx, ctx.Input("Ids"));
  const T* w = ctx.Input("W").data<T>();
  T* out = ctx.Output("Out")->mutable_data<T>();
  const int64_t d = a.width;
  ParallelFor(ctx.device(), a.num_ids, 2.0 * d, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t id = a.ids[i];
      if (a.padding != kNoPadding && id == a.padding) {
        std::fill_n(out + i * d, d, T(0));
      } else {
        std::copy_n(w + id * d, d, out + i * d);
      }
    }
  });
}

// Dense: W@GRAD = 0, then each kept id's row of Out@GRAD added to its row,
// in the order of Ids.
template <typename T>
void DenseLookupGrad(const ExecutionContext& ctx, const LookupArgs& a,
                     const T* dout) {
  Tensor* dw = ctx.Output(GradVarName("W"));
  T* g = dw->mutable_data<T>(ctx.Input("W").shape());
  std::fill_n(g, dw->numel(), T(0));
  const int64_t d = a.width;
  for (int64_t i = 0; i < a.num_ids; ++i) {
    const int64_t id = a.ids[i];
    if (a.padding != kNoPadding && id == a.padding) continue;
    T* row = g + id * d;
    const T* src = dout + i * d;
    for (int64_t j = 0; j < d; ++j) row[j] += src[j];
  }
}

// Sparse: one row per kept id, its value the id's row of Out@GRAD.
template <typename T>
void SparseLookupGrad(const ExecutionContext& ctx, const LookupArgs& a,
                      const T* dout) {
  SelectedRows* sr = ctx.OutputVar(GradVarName("W"))->GetMutableSelectedRows();
  std::vector<int64_t> positions;
  KeptIds(a, &positions, sr->mutable_rows());
  sr->set_height(a.height);
  const int64_t n = static_cast<int64_t>(positions.size());
  T* v = sr->mutable_value()->mutable_data<T>(Shape({n, a.width}));
  for (int64_t k = 0; k < n; ++k)
    std::copy_n(dout + positions[k] * a.width, a.width, v + k * a.width);
}

template <typename T>
void LookupTableGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradVarName("W"))) return;
  const LookupArgs a = CheckLookup(ctx, ctx.Input("Ids"));
  const T* dout = ctx.Input(GradVarName("Out")).data<T>();
  if (ctx.Attr<bool>("is_sparse")) {
    SparseLookupGrad<T>(ctx, a, dout);
  } else {
    DenseLookupGrad<T>(ctx, a, dout);
  }
}

}  // namespace

REGISTER_OP(lookup_table)
    .Doc("Out = the rows of the embedding table W picked by the int64 Ids.")
    .Input("W", "the table [V, D]")
    .Input("Ids", "int64 ids [N], [N, 1] or [..., 1], each in [0, V)")
    .Output("Out", "[N, D] or [..., D]: row Ids[i] of W, zeros for padding")
    .Attr<bool>("is_sparse", false,
                "W@GRAD as sparse rows (SelectedRows) instead of a [V, D] "
                "tensor")
    .Attr<bool>("is_distributed", false,
                "accepted for Fluid programs; every rank holds the whole "
                "table, so it changes nothing")
    .Attr<int64_t>("padding_idx", kNoPadding,
                   "the id whose rows read as zeros and get no gradient; -1: "
                   "none")
    .SetInferShape(LookupTableInferShape)
    .SetGrad(GradSpec("lookup_table_grad")
                 .Inputs({"W", "Ids"})
                 .OutGrads({"Out"})
                 .InGrads({"W"}))
    .CPUKernel<float>(LookupTableKernel<float>)
    .CPUKernel<double>(LookupTableKernel<double>);

REGISTER_GRAD_OP(lookup_table_grad)
    .Doc(
        "W@GRAD: the rows of Out@GRAD added into the rows their ids pick, "
        "dense or as sparse rows (is_sparse).")
    .SetInferShape(LookupTableGradInferShape)
    .CPUKernel<float>(LookupTableGradKernel<float>)
    .CPUKernel<double>(LookupTableGradKernel<double>);

}  // namespace ops
}  // namespace fluid
