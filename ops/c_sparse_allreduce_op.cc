// c_sparse_allreduce: Out = the sum (or average) over all ranks of the
// sparse rows X (a SelectedRows gradient, e.g. an embedding table's), in
// place. The collective transpiler puts it where a dense gradient's
// c_allreduce would go. The rows and values of every rank are gathered and
// merged (rows ascending, repeats summed in rank order) unless all ranks'
// rows together exceed sparse_dense_ratio of the table's height; then the
// rows are added into a dense table that is allreduced (see
// src/distributed/sparse_allreduce.h). With a Handle output it runs on the
// communicator's thread and a later c_wait completes it.
#include "ops/collective_helpers.h"

namespace fluid {
namespace ops {
namespace {

void SparseAllReduceInferShape(InferShapeContext* ctx) {
  FLUID_ENFORCE(ctx->IsSelectedRowsInput("X"), "c_sparse_allreduce: X '",
                ctx->InputName("X"),
                "' must hold sparse rows (SELECTED_ROWS); dense gradients "
                "are reduced by c_allreduce");
  ctx->SetOutputSelectedRows("Out");
  ctx->ShareShape("X", "Out");
}

void SparseAllReduceKernel(const ExecutionContext& ctx) {
  Variable* x = ctx.InputVar("X");
  FLUID_ENFORCE(x->IsSelectedRows(), "c_sparse_allreduce: X '",
                ctx.InputName("X"), "' holds no sparse rows");
  const ReduceOp op = ParseReduceOp(ctx.Attr<std::string>("reduce_type"));
  FLUID_ENFORCE(op == ReduceOp::kSum || op == ReduceOp::kAvg,
                "c_sparse_allreduce: reduce_type must be sum or avg, got ",
                ctx.Attr<std::string>("reduce_type"));
  const float ratio = ctx.Attr<float>("sparse_dense_ratio");
  FLUID_ENFORCE(ratio >= 0.0f, "c_sparse_allreduce: sparse_dense_ratio ", ratio,
                " must not be negative");
  SelectedRows* out = ctx.OutputVar("Out")->GetMutableSelectedRows();
  CommHandlePtr handle = CommunicatorOf(ctx)->SparseAllReduceAsync(
      x->Get<SelectedRows>(), out, op, ratio,
      ctx.device_context().ReadyFence());
  HandOffOrWait(ctx, std::move(handle));
}

}  // namespace

REGISTER_OP(c_sparse_allreduce)
    .Doc("Sums or averages sparse rows over all ranks into Out (normally X).")
    .Input("X", "the sparse rows (SELECTED_ROWS) to reduce")
    .Output("Out", "the reduced rows: ascending, no repeats")
    .OptionalOutput("Handle", "the in-flight reduction, for c_wait")
    .Attr<std::string>("reduce_type", "sum", "sum | avg")
    .Attr<float>("sparse_dense_ratio", 0.25f,
                 "above this fraction of the table's height (all ranks' "
                 "rows together) the rows are reduced as a dense table")
    .Attr<int32_t>("ring_id", 0, RingIdDoc())
    .InRange(0, kNoUpperBound)
    .SetInferShape(SparseAllReduceInferShape)
    .AnyPlaceKernel(SparseAllReduceKernel);

}  // namespace ops
}  // namespace fluid
