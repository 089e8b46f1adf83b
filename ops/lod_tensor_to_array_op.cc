// A batch of sequences as a tensor array of loop steps, and back:
//
//   lod_tensor_to_array  X (with LoD), RankTable -> Out: an array whose
//       slot t holds row t of every sequence longer than t, in the table's
//       order (longest first): the input of step t of a loop over the
//       sequences (Fluid's DynamicRNN).
//   array_to_lod_tensor  X (an array), RankTable -> Out: the inverse, the
//       sequences in their LoD order, with their LoD.
//
// Each is the other's gradient (a slot of a gradient array that no
// gradient reached reads as zeros). Kernels run on the host for every
// place (ops/lod_rank_table_op.h).
#include "ops/lod_rank_table_op.h"
#include "src/framework/tensor_array.h"

namespace fluid {
namespace ops {
namespace {

// The steps of host tensor `x` (whose LoD the table ranks).
LoDTensorArray SplitSteps(const Tensor& x, const LoDRankTable& table) {
  const int64_t steps = table.RunningAt(0) > 0 ? table.items[0].length : 0;
  LoDTensorArray out(steps);
  for (int64_t t = 0; t < steps; ++t) {
    const int64_t n = table.RunningAt(t);
    Tensor step(x.dtype(), ShapeWithRows(x.shape(), n));
    for (int64_t k = 0; k < n; ++k)
      CopyHostRows(x, x.lod()[table.items[k].index] + t, &step, k, 1);
    out[t] = std::move(step);
  }
  return out;
}

// The LoD of the sequences the table ranks, in their order.
LoD LoDOfTable(const LoDRankTable& table, const std::string& what) {
  std::vector<int64_t> lengths(table.items.size(), 0);
  for (const LoDRankItem& it : table.items) lengths[it.index] = it.length;
  return LoDFromLengths(lengths, what);
}

// Slot t of `steps` on the host with the rows running at step t; null
// where absent (a gradient that reached no slot) and `zeros_ok`.
const Tensor* StepOf(const ExecutionContext& ctx, const LoDTensorArray* steps,
                     int64_t t, int64_t n, bool zeros_ok, Tensor* host) {
  const bool have = steps != nullptr &&
                    t < static_cast<int64_t>(steps->size()) &&
                    (*steps)[t].initialized();
  if (!have) {
    FLUID_ENFORCE(zeros_ok, ctx.type(), ": array X '", ctx.InputName("X"),
                  "' holds ", steps == nullptr ? 0 : steps->size(),
                  " steps; step ", t, " is missing (the table's longest ",
                  "sequence needs one per row)");
    return nullptr;
  }
  host->CopyFrom((*steps)[t], Place::CPU());
  FLUID_ENFORCE(host->shape().rank() >= 1 && host->shape()[0] == n, ctx.type(),
                ": step ", t, " of array X '", ctx.InputName("X"),
                "' has shape ", host->shape(), " but ", n,
                " sequences run at that step (one row each)");
  return host;
}

// The sequences of `steps` put back in LoD order: a host tensor of
// `dtype`, rows shaped like `row_like`'s.
Tensor MergeSteps(const ExecutionContext& ctx, const LoDTensorArray* steps,
                  const LoDRankTable& table, DataType dtype,
                  const Shape& row_like, bool zeros_ok) {
  const LoD lod = LoDOfTable(table, ctx.type());
  Tensor out = HostZeros(dtype, ShapeWithRows(row_like, lod.back()));
  const int64_t n_steps = table.items.empty() ? 0 : table.items[0].length;
  for (int64_t t = 0; t < n_steps; ++t) {
    const int64_t n = table.RunningAt(t);
    Tensor host;
    const Tensor* step = StepOf(ctx, steps, t, n, zeros_ok, &host);
    if (step == nullptr) continue;
    FLUID_ENFORCE(step->dtype() == dtype && ShapeWithRows(step->shape(), 1) ==
                                                ShapeWithRows(row_like, 1),
                  ctx.type(), ": step ", t, " of array X '", ctx.InputName("X"),
                  "' is ", DataTypeName(step->dtype()), " ", step->shape(),
                  "; rows must be ", DataTypeName(dtype), " ",
                  ShapeWithRows(row_like, 1));
    for (int64_t k = 0; k < n; ++k)
      CopyHostRows(*step, k, &out, lod[table.items[k].index] + t, 1);
  }
  out.set_lod(lod);
  return out;
}

const LoDTensorArray* ArrayOrNull(const Variable* var) {
  return var != nullptr && var->HasValue() && !var->IsTensor()
             ? &var->Get<LoDTensorArray>()
             : nullptr;
}

void ToArrayInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  FLUID_ENFORCE(x.rank() >= 1, ctx->op_type(), ": X '", ctx->InputName("X"),
                "' must have a row dim, has shape ", x);
  if (ctx->IsRuntime()) return;  // Out holds an array
  ctx->SetOutputShape("Out", ShapeWithRows(x, -1));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  ctx->SetOutputLoDLevel("Out", 0);
}

void ToArrayKernel(const ExecutionContext& ctx) {
  const LoDRankTable& table = RankTableInput(ctx, "RankTable");
  Tensor x;
  x.CopyFrom(ctx.Input("X"), Place::CPU());
  x.set_lod(ctx.Input("X").lod());
  CheckLoDMatchesTable(ctx, x.lod(), table);
  LoDTensorArray steps = SplitSteps(x, table);
  LoDTensorArray* out = MutableTensorArray(ctx.OutputVar("Out"));
  out->assign(steps.size(), Tensor());
  for (size_t t = 0; t < steps.size(); ++t)
    (*out)[t].CopyFrom(steps[t], ctx.place());
}

// dX = the steps of Out@GRAD merged back, zeros where none reached.
void ToArrayGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const LoDRankTable& table = RankTableInput(ctx, "RankTable");
  const Tensor& x = ctx.Input("X");
  CheckLoDMatchesTable(ctx, x.lod(), table);
  Tensor dx = MergeSteps(ctx, ArrayOrNull(ctx.InputVar(GradSlot("Out"))), table,
                         x.dtype(), x.shape(), /*zeros_ok=*/true);
  Tensor* o = ctx.Output(GradSlot("X"));
  o->CopyFrom(dx, ctx.place());
  o->set_lod(x.lod());
}

void ToTensorInferShape(InferShapeContext* ctx) {
  if (ctx->IsRuntime()) return;  // X holds an array; the kernel sets Out
  ctx->SetOutputShape("Out", ShapeWithRows(ctx->GetInputShape("X"), -1));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  ctx->SetOutputLoDLevel("Out", 1);
}

// The row shape and dtype of array `steps` (its first slot).
const Tensor& FirstStep(const ExecutionContext& ctx,
                        const LoDTensorArray* steps,
                        const LoDRankTable& table) {
  FLUID_ENFORCE(table.RunningAt(0) > 0, ctx.type(), ": RankTable '",
                ctx.InputName("RankTable"), "' ranks ", table.items.size(),
                " sequences, all empty: there is no step to merge (the "
                "batch has no rows)");
  FLUID_ENFORCE(
      steps != nullptr && !steps->empty() && (*steps)[0].initialized(),
      ctx.type(), ": array X '", ctx.InputName("X"),
      "' holds no step 0 (write the loop's outputs with "
      "array_write)");
  return (*steps)[0];
}

void ToTensorKernel(const ExecutionContext& ctx) {
  const LoDRankTable& table = RankTableInput(ctx, "RankTable");
  const LoDTensorArray* steps = ArrayOrNull(ctx.InputVar("X"));
  const Tensor& first = FirstStep(ctx, steps, table);
  Tensor out = MergeSteps(ctx, steps, table, first.dtype(), first.shape(),
                          /*zeros_ok=*/false);
  Tensor* o = ctx.Output("Out");
  o->CopyFrom(out, ctx.place());
  o->set_lod(out.lod());
}

// dX = Out@GRAD split into steps shaped like X's.
void ToTensorGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const LoDRankTable& table = RankTableInput(ctx, "RankTable");
  Tensor dout;
  dout.CopyFrom(ctx.Input(GradSlot("Out")), Place::CPU());
  const LoD lod = LoDOfTable(table, ctx.type());
  FLUID_ENFORCE(dout.shape().rank() >= 1 && dout.shape()[0] == lod.back(),
                ctx.type(), ": Out@GRAD has shape ", dout.shape(), " but the ",
                "table's sequences have ", lod.back(), " rows");
  dout.set_lod(lod);
  LoDTensorArray steps = SplitSteps(dout, table);
  LoDTensorArray* dx = MutableTensorArray(ctx.OutputVar(GradSlot("X")));
  dx->assign(steps.size(), Tensor());
  for (size_t t = 0; t < steps.size(); ++t)
    (*dx)[t].CopyFrom(steps[t], ctx.place());
}

}  // namespace

REGISTER_OP(lod_tensor_to_array)
    .Doc(
        "Out[t] = row t of each sequence of X longer than t, in RankTable's "
        "order.")
    .Input("X", "a tensor with LoD")
    .Input("RankTable", "X's rank table (lod_rank_table)")
    .Output("Out", "the steps (a LOD_TENSOR_ARRAY var)")
    .SetInferShape(ToArrayInferShape)
    .SetGrad(GradSpec("lod_tensor_to_array_grad")
                 .Inputs({"X", "RankTable"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .AnyPlaceKernel(ToArrayKernel);

REGISTER_GRAD_OP(lod_tensor_to_array_grad)
    .Doc(
        "dX = array_to_lod_tensor(Out@GRAD), zeros where no gradient "
        "reached a step.")
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->ShareShape("X", GradSlot("X"));
    })
    .AnyPlaceKernel(ToArrayGradKernel);

REGISTER_OP(array_to_lod_tensor)
    .Doc(
        "Out = the steps of array X merged back into sequences (the "
        "inverse of lod_tensor_to_array).")
    .Input("X", "the steps (a LOD_TENSOR_ARRAY var)")
    .Input("RankTable", "the rank table the steps follow")
    .Output("Out", "a tensor with LoD")
    .SetInferShape(ToTensorInferShape)
    .SetGrad(GradSpec("array_to_lod_tensor_grad")
                 .Inputs({"X", "RankTable"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .AnyPlaceKernel(ToTensorKernel);

REGISTER_GRAD_OP(array_to_lod_tensor_grad)
    .Doc("dX = lod_tensor_to_array(Out@GRAD): an array of gradients.")
    .SetInferShape([](InferShapeContext* ctx) {
      if (ctx->IsRuntime()) return;
      ctx->SetOutputShape(GradSlot("X"), ctx->GetInputShape("X"));
      ctx->SetOutputDtype(GradSlot("X"), ctx->GetInputDtype("X"));
    })
    .AnyPlaceKernel(ToTensorGradKernel);

}  // namespace ops
}  // namespace fluid
