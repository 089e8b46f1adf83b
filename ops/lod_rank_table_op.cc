// The rank table of a batch of sequences and the ops reading it alone:
//
//   lod_rank_table   X (with LoD) -> Out: a LoDRankTable, the (index,
//                    length) of X's sequences, longest first, sequences of
//                    one length in their order (attr level: 0 only, over
//                    an X of one LoD level; an X of several, whose level 0
//                    Fluid ranks by its sub-sequences, is refused)
//   max_sequence_len RankTable -> Out: int64 [1], the longest length (0
//                    for no sequences)
//   reorder_lod_tensor_by_rank  X, RankTable -> Out: X's sequences (or,
//                    for X without LoD, its rows) in the table's order:
//                    Out's k-th is X's items[k].index-th. Its gradient
//                    puts them back.
//
// Kernels run on the host for every place (ops/lod_rank_table_op.h).
#include "ops/lod_rank_table_op.h"

#include <algorithm>

namespace fluid {
namespace ops {
namespace {

void RankTableInferShape(InferShapeContext* ctx) {
  const int level = ctx->Attr<int32_t>("level");
  FLUID_ENFORCE(level == 0, ctx->op_type(), ": attr level is ", level,
                "; only level 0 of a one-level X is ranked here");
  if (ctx->IsRuntime()) return;  // Out holds a table, not a tensor
  ctx->SetOutputShape("Out", Shape{-1, 2});
  ctx->SetOutputDtype("Out", DataType::kInt64);
}

void RankTableKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  FLUID_ENFORCE(x.has_lod(), ctx.type(), ": X '", ctx.InputName("X"),
                "' has no LoD; it must be a batch of sequences (lod_level=1)");
  FLUID_ENFORCE_CODE(
      x.lod_levels() == 1, ErrorCode::kUnimplemented, ctx.type(), ": X '",
      ctx.InputName("X"), "' has ", x.lod_levels(), " LoD levels ",
      LoDToString(x.all_lod()),
      "; a rank table (and DynamicRNN) ranks a one-level batch here. Pool "
      "or lod_reset it to the level to run over first");
  const std::vector<int64_t> lengths = LoDLengths(x.lod());
  LoDRankTable* table = MutableRankTable(ctx.OutputVar("Out"));
  table->items.clear();
  for (size_t i = 0; i < lengths.size(); ++i)
    table->items.push_back({static_cast<int64_t>(i), lengths[i]});
  std::stable_sort(table->items.begin(), table->items.end(),
                   [](const LoDRankItem& a, const LoDRankItem& b) {
                     return a.length > b.length;
                   });
}

void MaxLenInferShape(InferShapeContext* ctx) {
  if (ctx->IsRuntime()) return;
  ctx->SetOutputShape("Out", Shape{1});
  ctx->SetOutputDtype("Out", DataType::kInt64);
}

void MaxLenKernel(const ExecutionContext& ctx) {
  const LoDRankTable& table = RankTableInput(ctx, "RankTable");
  Tensor host(DataType::kInt64, Shape{1});
  host.mutable_data<int64_t>()[0] =
      table.items.empty() ? 0 : table.items.front().length;
  ctx.Output("Out")->CopyFrom(host, ctx.place());
}

void ReorderInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  FLUID_ENFORCE(x.rank() >= 1, ctx->op_type(), ": X '", ctx->InputName("X"),
                "' must have a row dim, has shape ", x);
  if (ctx->IsRuntime()) return;  // the kernel sets Out and its LoD
  ctx->SetOutputShape("Out", x);
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  ctx->SetOutputLoDLevel("Out", ctx->InputLoDLevel("X"));
}

// The row spans of X's units (its sequences, or its rows without LoD):
// unit u is rows [starts[u], starts[u] + lengths[u]).
void UnitsOf(const Tensor& x, std::vector<int64_t>* starts,
             std::vector<int64_t>* lengths) {
  starts->clear();
  lengths->clear();
  if (x.has_lod()) {
    for (int64_t u = 0; u < LoDCount(x.lod()); ++u) {
      starts->push_back(x.lod()[u]);
      lengths->push_back(x.lod()[u + 1] - x.lod()[u]);
    }
    return;
  }
  for (int64_t r = 0; r < x.shape()[0]; ++r) {
    starts->push_back(r);
    lengths->push_back(1);
  }
}

// Moves X's units into the table's order (forward) or back (the
// gradient: `src` holds them in the table's order, laid out as `like`'s
// would be reordered). Returns the host result, with `like`'s LoD
// reordered (forward) or `like`'s LoD (back).
Tensor ReorderRows(const ExecutionContext& ctx, const Tensor& like,
                   const Tensor& src_dev, bool back) {
  const LoDRankTable& table = RankTableInput(ctx, "RankTable");
  std::vector<int64_t> starts, lengths;
  UnitsOf(like, &starts, &lengths);
  FLUID_ENFORCE(starts.size() == table.items.size(), ctx.type(), ": X '",
                ctx.InputName("X"), "' holds ", starts.size(),
                like.has_lod() ? " sequences" : " rows (it has no LoD)",
                " but RankTable '", ctx.InputName("RankTable"), "' ranks ",
                table.items.size());
  Tensor src;
  src.CopyFrom(src_dev, Place::CPU());
  FLUID_ENFORCE(src.shape().rank() >= 1 && src.shape()[0] == like.shape()[0],
                ctx.type(), ": a gradient of shape ", src.shape(),
                " for X of shape ", like.shape());
  Tensor out(src.dtype(), src.shape());
  std::vector<int64_t> new_lengths;
  int64_t pos = 0;  // the row where the k-th unit in table order begins
  for (const LoDRankItem& it : table.items) {
    const int64_t u = it.index;
    FLUID_ENFORCE(u >= 0 && u < static_cast<int64_t>(starts.size()), ctx.type(),
                  ": RankTable '", ctx.InputName("RankTable"), "' names unit ",
                  u, " of ", starts.size());
    if (back) {
      CopyHostRows(src, pos, &out, starts[u], lengths[u]);
    } else {
      CopyHostRows(src, starts[u], &out, pos, lengths[u]);
    }
    new_lengths.push_back(lengths[u]);
    pos += lengths[u];
  }
  if (like.has_lod())
    out.set_lod(back ? like.lod() : LoDFromLengths(new_lengths, ctx.type()));
  return out;
}

void ReorderKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor out = ReorderRows(ctx, x, x, /*back=*/false);
  Tensor* o = ctx.Output("Out");
  o->CopyFrom(out, ctx.place());
  o->set_lod(out.lod());
}

void ReorderGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const Tensor& x = ctx.Input("X");
  Tensor dx = ReorderRows(ctx, x, ctx.Input(GradSlot("Out")), /*back=*/true);
  Tensor* o = ctx.Output(GradSlot("X"));
  o->CopyFrom(dx, ctx.place());
  o->set_lod(x.lod());
}

}  // namespace

REGISTER_OP(lod_rank_table)
    .Doc(
        "Out = the (index, length) of X's sequences, longest first "
        "(stable).")
    .Input("X", "a tensor with LoD")
    .Output("Out", "the rank table (a LoDRankTable)")
    .Attr<int32_t>("level", 0, "the LoD level ranked (0)")
    .SetInferShape(RankTableInferShape)
    .AnyPlaceKernel(RankTableKernel);

REGISTER_OP(max_sequence_len)
    .Doc("Out = the longest sequence length of RankTable, int64 [1].")
    .Input("RankTable", "a rank table (lod_rank_table)")
    .Output("Out", "int64 [1]")
    .SetInferShape(MaxLenInferShape)
    .AnyPlaceKernel(MaxLenKernel);

REGISTER_OP(reorder_lod_tensor_by_rank)
    .Doc("Out = X's sequences (rows without LoD) in RankTable's order.")
    .Input("X", "the tensor reordered")
    .Input("RankTable", "a rank table (lod_rank_table)")
    .Output("Out", "X reordered (its LoD reordered with it)")
    .SetInferShape(ReorderInferShape)
    .SetGrad(GradSpec("reorder_lod_tensor_by_rank_grad")
                 .Inputs({"X", "RankTable"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .AnyPlaceKernel(ReorderKernel);

REGISTER_GRAD_OP(reorder_lod_tensor_by_rank_grad)
    .Doc("dX = Out@GRAD's sequences put back in X's order.")
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->ShareShape("X", GradSlot("X"));
    })
    .AnyPlaceKernel(ReorderGradKernel);

}  // namespace ops
}  // namespace fluid
