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
//
// c_embedding is the lookup of tensor parallelism's vocabulary-parallel
// embedding: W is this rank's block of rows of the table, an id of another
// rank's rows reads zeros (the group's sum of the outputs is the whole
// lookup), and its gradient adds into this rank's rows only.
#include "ops/lookup_table_op.h"

#include <algorithm>
#include <string>

#include "ops/collective_helpers.h"
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

namespace {

// The first row of the whole table W holds.
int64_t StartRow(const ExecutionContext& ctx, int64_t height) {
  const int64_t start = ctx.Attr<int64_t>("start_index");
  if (start >= 0) return start;
  const int nranks = ctx.Attr<int32_t>("nranks");
  Communicator* ring = nranks > 1 ? CommunicatorOf(ctx) : nullptr;
  if (ring == nullptr) return 0;
  CheckRanks(ring, nranks, "c_embedding");
  return ring->rank() * height;
}

}  // namespace

LookupArgs LocalLookup(const ExecutionContext& ctx, const Tensor& host_ids,
                       std::vector<int64_t>* local) {
  const Tensor& w = ctx.Input("W");
  LookupArgs a;
  a.height = w.shape()[0];
  a.width = w.shape().Product(1, w.shape().rank());
  a.padding = a.height;  // a row W does not have: reads zeros
  const int64_t start = StartRow(ctx, a.height);
  const int64_t rows = a.height * ctx.Attr<int32_t>("nranks");
  const int64_t pad = ctx.Attr<int64_t>("padding_idx");
  const int64_t* ids = host_ids.data<int64_t>();
  a.num_ids = host_ids.numel();
  local->resize(static_cast<size_t>(a.num_ids));
  for (int64_t i = 0; i < a.num_ids; ++i) {
    const int64_t id = ids[i];
    (*local)[i] = a.height;
    if (pad != kNoPadding && id == pad) continue;
    FLUID_ENFORCE(id >= 0 && id < rows, ctx.type(), ": Ids '",
                  ctx.InputName("Ids"), "' holds id ", id, " at position ", i,
                  ", outside [0, ", rows, ") (the rows of the whole table)");
    if (id >= start && id < start + a.height) (*local)[i] = id - start;
  }
  a.ids = local->data();
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
void GatherLookup(const ExecutionContext& ctx, const LookupArgs& a) {
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

template <typename T>
void LookupTableKernel(const ExecutionContext& ctx) {
  GatherLookup<T>(ctx, CheckLookup(ctx, ctx.Input("Ids")));
}

template <typename T>
void CEmbeddingKernel(const ExecutionContext& ctx) {
  std::vector<int64_t> local;
  GatherLookup<T>(ctx, LocalLookup(ctx, ctx.Input("Ids"), &local));
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
void LookupGrad(const ExecutionContext& ctx, const LookupArgs& a) {
  const T* dout = ctx.Input(GradVarName("Out")).data<T>();
  if (ctx.Attr<bool>("is_sparse")) {
    SparseLookupGrad<T>(ctx, a, dout);
  } else {
    DenseLookupGrad<T>(ctx, a, dout);
  }
}

template <typename T>
void LookupTableGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradVarName("W"))) return;
  LookupGrad<T>(ctx, CheckLookup(ctx, ctx.Input("Ids")));
}

template <typename T>
void CEmbeddingGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradVarName("W"))) return;
  std::vector<int64_t> local;
  LookupGrad<T>(ctx, LocalLookup(ctx, ctx.Input("Ids"), &local));
}

void CEmbeddingInferShape(InferShapeContext* ctx) {
  const Shape w = ctx->GetInputShape("W");
  FLUID_ENFORCE(w.rank() == 2, "c_embedding: W '", ctx->InputName("W"),
                "' must be a [rows, width] block of the table, got ", w);
  ctx->SetOutputShape("Out", LookupOutShape(ctx, w));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("W"));
  ctx->ShareLoD("Ids", "Out");
}

void CEmbeddingGradInferShape(InferShapeContext* ctx) {
  if (!ctx->HasOutput(GradVarName("W"))) return;
  if (ctx->Attr<bool>("is_sparse"))
    ctx->SetOutputSelectedRows(GradVarName("W"));
  ctx->ShareShape("W", GradVarName("W"));
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

REGISTER_OP(c_embedding)
    .Doc(
        "A vocabulary-parallel lookup: Out = the rows of this rank's block W "
        "of the table picked by the ids in it, zeros for the others (the "
        "group's sum of Out is the whole table's lookup).")
    .Input("W", "this rank's rows [start, start + rows) of the table")
    .Input("Ids", "int64 ids [N], [N, 1] or [..., 1] in the whole table")
    .Output("Out", "[N, D] or [..., D]: W's row for its ids, zeros else")
    .Attr<bool>("is_sparse", false, "W@GRAD as sparse rows (SelectedRows)")
    .Attr<bool>("is_distributed", false, "accepted for Fluid programs")
    .Attr<int64_t>("padding_idx", kNoPadding,
                   "the id that reads zeros on every rank; -1: none")
    .Attr<int32_t>("ring_id", 0, RingIdDoc())
    .Attr<int32_t>("nranks", 1, "the ranks holding the table's blocks")
    .Attr<int64_t>("start_index", -1,
                   "the table row W starts at; -1: the ring rank x W's rows")
    .SetInferShape(CEmbeddingInferShape)
    .SetGrad(GradSpec("c_embedding_grad")
                 .Inputs({"W", "Ids"})
                 .OutGrads({"Out"})
                 .InGrads({"W"}))
    .CPUKernel<float>(CEmbeddingKernel<float>)
    .CPUKernel<double>(CEmbeddingKernel<double>);

REGISTER_GRAD_OP(c_embedding_grad)
    .Doc("W@GRAD: the rows of Out@GRAD whose ids are in W, added into them.")
    .SetInferShape(CEmbeddingGradInferShape)
    .CPUKernel<float>(CEmbeddingGradKernel<float>)
    .CPUKernel<double>(CEmbeddingGradKernel<double>);

}  // namespace ops
}  // namespace fluid
