// lod_reset: Out = X's data with new LoD offsets (Fluid's op behind
// fluid.layers.lod_reset and lod_append). The offsets come from, in order:
//   Y's LoD, when Y is given and carries one;
//   Y's data (int32 or int64 offsets), when Y is given without LoD;
//   attr target_lod otherwise.
// They must start at 0, never decrease and end at X's row count. Y's LoD
// is taken whole, every level of it, as Fluid does (beam search resets a
// step's state to the two levels of the beam's scores).
// append=true (lod_append) adds the offsets as a new last level below X's
// LoD: X's finest level then indexes the new level's sequences, and must
// end at their count (an error naming both otherwise).
// The gradient is Out@GRAD's data with X's LoD. The kernels move no
// arithmetic: one kernel serves every place, reading offsets on the host;
// Out is a copy of X, not a view, so that a later op reusing X's memory
// cannot change it.
#include <string>
#include <vector>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

void LoDResetInferShape(InferShapeContext* ctx) {
  const bool has_y = ctx->HasInput("Y");
  FLUID_ENFORCE(has_y || !ctx->Attr<std::vector<int32_t>>("target_lod").empty(),
                ctx->op_type(),
                ": neither Y nor attr target_lod gives the new LoD");
  if (ctx->IsRuntime()) return;  // the kernel sets Out and checks Y's data
  if (has_y && ctx->InputLoDLevel("Y") == 0) {
    const DataType t = ctx->GetInputDtype("Y");
    FLUID_ENFORCE(t == DataType::kInt32 || t == DataType::kInt64,
                  ctx->op_type(), ": Y '", ctx->InputName("Y"),
                  "' has no LoD, so its data are the offsets; it is ",
                  DataTypeName(t), ", not int32 or int64");
  }
  ctx->SetOutputShape("Out", ctx->GetInputShape("X"));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  int level = 1;
  if (has_y && ctx->InputLoDLevel("Y") > 0) {
    level = ctx->InputLoDLevel("Y");
  } else if (ctx->Attr<bool>("append")) {
    level = ctx->InputLoDLevel("X") + 1;
  }
  ctx->SetOutputLoDLevel("Out", level);
}

// Y's data as offsets (any place; int32 or int64).
LoD OffsetsOf(const ExecutionContext& ctx, const Tensor& y) {
  FLUID_ENFORCE(y.dtype() == DataType::kInt32 || y.dtype() == DataType::kInt64,
                ctx.type(), ": Y '", ctx.InputName("Y"),
                "' has no LoD, so its data are the offsets; it is ",
                DataTypeName(y.dtype()), ", not int32 or int64");
  Tensor host;
  host.CopyFrom(y, Place::CPU());
  LoD lod;
  for (int64_t i = 0; i < host.numel(); ++i)
    lod.push_back(host.dtype() == DataType::kInt32
                      ? static_cast<int64_t>(host.data<int32_t>()[i])
                      : host.data<int64_t>()[i]);
  return lod;
}

// The new offsets, from Y's data or target_lod.
LoD TargetOffsets(const ExecutionContext& ctx) {
  if (ctx.HasInput("Y")) return OffsetsOf(ctx, ctx.Input("Y"));
  const auto& attr = ctx.Attr<std::vector<int32_t>>("target_lod");
  return LoD(attr.begin(), attr.end());
}

// Out's levels: Y's LoD whole, else the new offsets alone or (append)
// below X's levels.
LoDLevels TargetLoD(const ExecutionContext& ctx, const Tensor& x) {
  if (ctx.HasInput("Y") && ctx.Input("Y").has_lod())
    return ctx.Input("Y").all_lod();
  LoD offsets = TargetOffsets(ctx);
  CheckLoD(offsets, x.shape()[0],
           ctx.type() + ": the new LoD of X '" + ctx.InputName("X") + "'");
  LoDLevels levels;
  if (ctx.Attr<bool>("append")) levels = x.all_lod();
  levels.push_back(std::move(offsets));
  return levels;
}

void LoDResetKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  FLUID_ENFORCE(x.shape().rank() >= 1, ctx.type(), ": X '", ctx.InputName("X"),
                "' has no row dim (shape ", x.shape(), ")");
  LoDLevels levels = TargetLoD(ctx, x);
  CheckLoDLevels(
      levels, x.shape()[0],
      ctx.type() + ": the new LoD of X '" + ctx.InputName("X") + "'");
  Tensor* out = ctx.Output("Out");
  out->CopyFrom(x, ctx.place());
  out->set_all_lod(std::move(levels));
}

void LoDResetGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.shape() == x.shape(), ctx.type(), ": Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " is not shaped as X '", ctx.InputName("X"), "' ", x.shape());
  Tensor* dx = ctx.Output(GradSlot("X"));
  dx->CopyFrom(dout, ctx.place());
  dx->set_all_lod(x.all_lod());
}

}  // namespace

REGISTER_OP(lod_reset)
    .Doc("Out = X with the LoD of Y, the offsets in Y, or target_lod.")
    .Input("X", "the tensor whose data Out takes")
    .OptionalInput("Y", "a tensor with LoD, or int32/int64 offsets")
    .Output("Out", "X's data with the new LoD")
    .Attr<std::vector<int32_t>>("target_lod", {},
                                "the new offsets when Y is not given")
    .Attr<bool>("append", false,
                "add the offsets as a new last level below X's LoD "
                "(lod_append)")
    .SetInferShape(LoDResetInferShape)
    .SetGrad(GradSpec("lod_reset_grad")
                 .Inputs({"X"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .AnyPlaceKernel(LoDResetKernel);

REGISTER_GRAD_OP(lod_reset_grad)
    .Doc("X@GRAD = Out@GRAD's data with X's LoD.")
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->ShareShape("X", GradSlot("X"));
    })
    .AnyPlaceKernel(LoDResetGradKernel);

}  // namespace ops
}  // namespace fluid
