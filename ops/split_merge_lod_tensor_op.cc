// split_lod_tensor and merge_lod_tensor: the rows of a batch parted by a
// bool mask and put back in order (Fluid 1.x's IfElse: each branch runs on
// its rows, docs/design.md, "Control flow").
//
// split_lod_tensor (X, Mask -> OutTrue, OutFalse; attr level): the rows of
// X (its first dim) where Mask (bool, one per row: [N] or [N, 1]) is true,
// in order, and those where it is false. A side may get no rows: a [0, ...]
// tensor.
// merge_lod_tensor (X, Mask, InTrue, InFalse -> Out; attr level): row i of
// Out is the next row of InTrue where Mask[i] holds, else the next row of
// InFalse. A side with no rows is not read (its branch did not run). X is
// the batch the mask parted; only its row count is checked.
// Each is the other's gradient. Rows of a LoD tensor (level 1) are not
// split here: only level 0 over plain rows.
// The kernels copy rows on the host whatever the place (as the control-flow
// ops do): these ops move little data.
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

void CheckLevel(InferShapeContext* ctx) {
  const int level = ctx->Attr<int32_t>("level");
  FLUID_ENFORCE(level == 0, ctx->op_type(), ": attr level is ", level,
                "; only level 0 (the rows of the batch) is supported");
}

void CheckMask(InferShapeContext* ctx, int64_t rows) {
  const DataType d = ctx->GetInputDtype("Mask");
  FLUID_ENFORCE(d == DataType::kBool, ctx->op_type(), ": Mask '",
                ctx->InputName("Mask"), "' is ", DataTypeName(d),
                "; it must be bool, one per row");
  const Shape m = ctx->GetInputShape("Mask");
  FLUID_ENFORCE(m.rank() == 1 || (m.rank() == 2 && m[1] == 1), ctx->op_type(),
                ": Mask '", ctx->InputName("Mask"), "' has shape ", m,
                "; it must be [N] or [N, 1]");
  FLUID_ENFORCE(rows < 0 || m[0] < 0 || m[0] == rows, ctx->op_type(),
                ": Mask '", ctx->InputName("Mask"), "' has ", m[0],
                " rows but the batch has ", rows);
}

// The mask on the host, one bool per row.
std::vector<bool> MaskOf(const ExecutionContext& ctx, int64_t rows) {
  const Tensor& m = ctx.Input("Mask");
  FLUID_ENFORCE(m.dtype() == DataType::kBool && m.numel() == rows, ctx.type(),
                ": Mask '", ctx.InputName("Mask"), "' must be ", rows,
                " bools, one per row, is ", DataTypeName(m.dtype()), " ",
                m.shape());
  Tensor host;
  host.CopyFrom(m, Place::CPU());
  const bool* p = host.data<bool>();
  return std::vector<bool>(p, p + rows);
}

Shape WithRows(const Shape& s, int64_t rows) {
  Shape out = s;
  out[0] = rows;
  return out;
}

void SplitInferShape(InferShapeContext* ctx) {
  CheckLevel(ctx);
  const Shape x = ctx->GetInputShape("X");
  FLUID_ENFORCE(x.rank() >= 1, ctx->op_type(), ": X '", ctx->InputName("X"),
                "' must have a row dim, has shape ", x);
  CheckMask(ctx, x[0]);
  for (const char* out : {"OutTrue", "OutFalse"}) {
    if (!ctx->HasOutput(out)) continue;
    if (!ctx->IsRuntime()) ctx->SetOutputShape(out, WithRows(x, -1));
    ctx->SetOutputDtype(out, ctx->GetInputDtype("X"));
  }
}

void SplitKernel(const ExecutionContext& ctx) {
  Tensor x;
  x.CopyFrom(ctx.Input("X"), Place::CPU());
  const int64_t rows = x.shape()[0];
  const std::vector<bool> mask = MaskOf(ctx, rows);
  const size_t row_bytes = rows > 0 ? x.bytes() / rows : 0;
  const int64_t n_true = std::count(mask.begin(), mask.end(), true);
  Tensor parts[2] = {Tensor(x.dtype(), WithRows(x.shape(), rows - n_true)),
                     Tensor(x.dtype(), WithRows(x.shape(), n_true))};
  char* dst[2] = {static_cast<char*>(parts[0].raw_mutable_data()),
                  static_cast<char*>(parts[1].raw_mutable_data())};
  const char* src = static_cast<const char*>(x.raw_data());
  for (int64_t r = 0; r < rows; ++r) {
    const int side = mask[r] ? 1 : 0;
    if (row_bytes > 0) std::memcpy(dst[side], src + r * row_bytes, row_bytes);
    dst[side] += row_bytes;
  }
  if (ctx.HasOutput("OutTrue"))
    ctx.Output("OutTrue")->CopyFrom(parts[1], ctx.place());
  if (ctx.HasOutput("OutFalse"))
    ctx.Output("OutFalse")->CopyFrom(parts[0], ctx.place());
}

void MergeInferShape(InferShapeContext* ctx) {
  // At run time a side with no rows may hold no value: the kernel checks.
  if (ctx->IsRuntime()) return;
  CheckLevel(ctx);
  const Shape x = ctx->GetInputShape("X");
  CheckMask(ctx, x.rank() >= 1 ? x[0] : -1);
  const Shape t = ctx->GetInputShape("InTrue"),
              f = ctx->GetInputShape("InFalse");
  const DataType dt = ctx->GetInputDtype("InTrue"),
                 df = ctx->GetInputDtype("InFalse");
  {
    FLUID_ENFORCE(dt == df, ctx->op_type(), ": InTrue '",
                  ctx->InputName("InTrue"), "' is ", DataTypeName(dt),
                  " but InFalse '", ctx->InputName("InFalse"), "' is ",
                  DataTypeName(df), "; both branches must give one dtype");
    FLUID_ENFORCE(t.rank() >= 1 && t.rank() == f.rank(), ctx->op_type(),
                  ": InTrue has shape ", t, " and InFalse ", f,
                  "; both must be rows of one shape");
    for (int k = 1; k < t.rank(); ++k)
      FLUID_ENFORCE(t[k] < 0 || f[k] < 0 || t[k] == f[k], ctx->op_type(),
                    ": InTrue has shape ", t, " and InFalse ", f,
                    "; their rows differ in dim ", k);
  }
  const Shape mask = ctx->GetInputShape("Mask");
  ctx->SetOutputShape("Out", WithRows(t.rank() >= 1 ? t : f, mask[0]));
  ctx->SetOutputDtype("Out", dt);
}

void MergeKernel(const ExecutionContext& ctx) {
  const int64_t rows = ctx.Input("Mask").numel();
  const std::vector<bool> mask = MaskOf(ctx, rows);
  const int64_t n_true = std::count(mask.begin(), mask.end(), true);
  const int64_t want[2] = {rows - n_true, n_true};
  const char* slots[2] = {"InFalse", "InTrue"};
  Tensor parts[2];
  const Tensor* like = nullptr;
  for (int side = 0; side < 2; ++side) {
    if (want[side] == 0) continue;
    const Variable* v = ctx.InputVar(slots[side]);
    FLUID_ENFORCE(v != nullptr && v->HasValue() && v->IsTensor() &&
                      v->GetTensor().initialized(),
                  ctx.type(), ": ", slots[side], " '",
                  ctx.InputName(slots[side]), "' holds no value but Mask ",
                  "gives it ", want[side], " rows");
    parts[side].CopyFrom(v->GetTensor(), Place::CPU());
    FLUID_ENFORCE(
        parts[side].shape().rank() >= 1 && parts[side].shape()[0] == want[side],
        ctx.type(), ": ", slots[side], " '", ctx.InputName(slots[side]),
        "' has shape ", parts[side].shape(), " but Mask gives it ", want[side],
        " rows");
    if (like != nullptr)
      FLUID_ENFORCE(
          WithRows(like->shape(), 1) == WithRows(parts[side].shape(), 1) &&
              like->dtype() == parts[side].dtype(),
          ctx.type(),
          ": InTrue and InFalse differ: ", DataTypeName(like->dtype()), " ",
          like->shape(), " and ", DataTypeName(parts[side].dtype()), " ",
          parts[side].shape());
    like = &parts[side];
  }
  FLUID_ENFORCE(like != nullptr || rows == 0, ctx.type(), ": no rows");
  if (like == nullptr) {
    const Tensor& t = ctx.Input("InTrue");
    ctx.Output("Out")->CopyFrom(Tensor(t.dtype(), WithRows(t.shape(), 0)),
                                ctx.place());
    return;
  }
  Tensor out(like->dtype(), WithRows(like->shape(), rows));
  const size_t row_bytes = rows > 0 ? out.bytes() / rows : 0;
  char* dst = static_cast<char*>(out.raw_mutable_data());
  const char* src[2] = {
      want[0] ? static_cast<const char*>(parts[0].raw_data()) : nullptr,
      want[1] ? static_cast<const char*>(parts[1].raw_data()) : nullptr};
  for (int64_t r = 0; r < rows; ++r) {
    const int side = mask[r] ? 1 : 0;
    if (row_bytes > 0) std::memcpy(dst + r * row_bytes, src[side], row_bytes);
    src[side] += row_bytes;
  }
  ctx.Output("Out")->CopyFrom(out, ctx.place());
}

}  // namespace

REGISTER_OP(split_lod_tensor)
    .Doc("The rows of X where Mask holds (OutTrue) and where not (OutFalse).")
    .Input("X", "the batch: rows along dim 0")
    .Input("Mask", "bool [N] or [N, 1], one per row")
    .Output("OutTrue", "X's rows where Mask is true, in order")
    .Output("OutFalse", "X's rows where Mask is false, in order")
    .Attr<int32_t>("level", 0, "the LoD level to split at (0 only)")
    .SetInferShape(SplitInferShape)
    .SetGradMaker([](const proto::OpDesc& op) -> std::vector<proto::OpDesc> {
      return {MakeOp("merge_lod_tensor",
                     {{"X", OpInput(op, "X")},
                      {"Mask", OpInput(op, "Mask")},
                      {"InTrue", {GradVarName(OpOutput(op, "OutTrue")[0])}},
                      {"InFalse", {GradVarName(OpOutput(op, "OutFalse")[0])}}},
                     {{"Out", {GradVarName(OpInput(op, "X")[0])}}},
                     {{"level", 0}})};
    })
    .AnyPlaceKernel(SplitKernel);

REGISTER_OP(merge_lod_tensor)
    .Doc("Rows taken from InTrue where Mask holds and from InFalse elsewhere.")
    .Input("X", "the batch Mask parted (its row count)")
    .Input("Mask", "bool [N] or [N, 1], one per row")
    .Input("InTrue", "the rows where Mask is true")
    .Input("InFalse", "the rows where Mask is false")
    .Output("Out", "N rows, in the batch's order")
    .Attr<int32_t>("level", 0, "the LoD level to merge at (0 only)")
    .SetInferShape(MergeInferShape)
    .SetGradMaker([](const proto::OpDesc& op) -> std::vector<proto::OpDesc> {
      return {MakeOp("split_lod_tensor",
                     {{"X", {GradVarName(OpOutput(op, "Out")[0])}},
                      {"Mask", OpInput(op, "Mask")}},
                     {{"OutTrue", {GradVarName(OpInput(op, "InTrue")[0])}},
                      {"OutFalse", {GradVarName(OpInput(op, "InFalse")[0])}}},
                     {{"level", 0}})};
    })
    .AnyPlaceKernel(MergeKernel);

}  // namespace ops
}  // namespace fluid
