// shrink_rnn_memory (X, I, RankTable -> Out): the first rows of X, one per
// sequence still running at loop step I (longer than I): a loop over
// sequences sorted longest first keeps its state for those alone (Fluid's
// DynamicRNN; Python: fluid.layers.shrink_memory). Out carries no LoD;
// but for an X with LoD (DynamicRNN's static_input of a sequence batch,
// one sequence per sequence of the loop) Out is X's first sequences, one
// per running sequence, with their LoD, as Fluid's op does.
// Its gradient: dX = Out@GRAD in the first rows, zeros in the rest.
// Kernels run on the host for every place (ops/lod_rank_table_op.h).
#include "ops/lod_rank_table_op.h"

namespace fluid {
namespace ops {
namespace {

void ShrinkInferShape(InferShapeContext* ctx) {
  const DataType d = ctx->GetInputDtype("I");
  FLUID_ENFORCE(d == DataType::kInt64 || d == DataType::kInt32, ctx->op_type(),
                ": I '", ctx->InputName("I"), "' is ", DataTypeName(d),
                "; the step is int64 (or int32) [1]");
  const Shape x = ctx->GetInputShape("X");
  FLUID_ENFORCE(x.rank() >= 1, ctx->op_type(), ": X '", ctx->InputName("X"),
                "' must have a row dim, has shape ", x);
  if (ctx->IsRuntime()) return;  // the kernel sets Out
  ctx->SetOutputShape("Out", ShapeWithRows(x, -1));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  ctx->SetOutputLoDLevel("Out", ctx->InputLoDLevel("X") > 0 ? 1 : 0);
}

void ShrinkKernel(const ExecutionContext& ctx) {
  const LoDRankTable& table = RankTableInput(ctx, "RankTable");
  const int64_t step = StepInput(ctx, "I");
  const int64_t n = table.RunningAt(step);
  Tensor x;
  x.CopyFrom(ctx.Input("X"), Place::CPU());
  const bool seqs = x.has_lod();
  const int64_t units = seqs ? LoDCount(x.lod()) : x.shape()[0];
  FLUID_ENFORCE(units >= n, ctx.type(), ": X '", ctx.InputName("X"), "' has ",
                units, seqs ? " sequences" : " rows", " but ", n,
                " sequences run at step ", step, "; X needs one ",
                seqs ? "sequence" : "row", " each");
  const int64_t rows = seqs ? x.lod()[n] : n;
  Tensor out(x.dtype(), ShapeWithRows(x.shape(), rows));
  CopyHostRows(x, 0, &out, 0, rows);
  if (seqs) out.set_lod(LoD(x.lod().begin(), x.lod().begin() + n + 1));
  Tensor* o = ctx.Output("Out");
  o->CopyFrom(out, ctx.place());
  o->set_lod(out.lod());
}

// dX: Out@GRAD in its rows, zeros below (and everywhere when no gradient
// reached Out).
void ShrinkGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const Tensor& x = ctx.Input("X");
  Tensor dx = HostZeros(x.dtype(), x.shape());
  const Variable* dvar = ctx.InputVar(GradSlot("Out"));
  if (dvar != nullptr && dvar->HasValue() && dvar->IsTensor() &&
      dvar->GetTensor().initialized()) {
    Tensor dout;
    dout.CopyFrom(dvar->GetTensor(), Place::CPU());
    FLUID_ENFORCE(
        dout.dtype() == x.dtype() && dout.shape().rank() >= 1 &&
            dout.shape()[0] <= x.shape()[0] &&
            ShapeWithRows(dout.shape(), 1) == ShapeWithRows(x.shape(), 1),
        ctx.type(), ": Out@GRAD is ", DataTypeName(dout.dtype()), " ",
        dout.shape(), " for X ", DataTypeName(x.dtype()), " ", x.shape());
    CopyHostRows(dout, 0, &dx, 0, dout.shape()[0]);
  }
  ctx.Output(GradSlot("X"))->CopyFrom(dx, ctx.place());
}

}  // namespace

REGISTER_OP(shrink_rnn_memory)
    .Doc(
        "Out = the first rows of X, one per sequence of RankTable longer "
        "than I.")
    .Input("X", "the loop's state, one row per running sequence (or more)")
    .Input("I", "int64 [1]: the loop step")
    .Input("RankTable", "the rank table of the loop's sequences")
    .Output("Out", "X's first rows")
    .SetInferShape(ShrinkInferShape)
    .SetGrad(GradSpec("shrink_rnn_memory_grad")
                 .Inputs({"X"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .AnyPlaceKernel(ShrinkKernel);

REGISTER_GRAD_OP(shrink_rnn_memory_grad)
    .Doc("dX = Out@GRAD in the first rows, zeros in the rest.")
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->ShareShape("X", GradSlot("X"));
    })
    .AnyPlaceKernel(ShrinkGradKernel);

}  // namespace ops
}  // namespace fluid
