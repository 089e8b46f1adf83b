// fill_any_like: Out = value everywhere, shaped like X, of the dtype attr
// (-1: X's own). Only X's shape is read. Behind fluid.layers.ones_like and
// zeros_like.
#include <algorithm>

#include "ops/dtype_visit.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

DataType FillAnyLikeDtype(int32_t attr, DataType x, const std::string& op) {
  return attr == -1 ? x : DtypeAttr(attr, op, "dtype");
}

void FillAnyLikeInferShape(InferShapeContext* ctx) {
  const DataType dt = FillAnyLikeDtype(
      ctx->Attr<int32_t>("dtype"), ctx->GetInputDtype("X"), "fill_any_like");
  FLUID_ENFORCE(dt != DataType::kBool, "fill_any_like: dtype bool of '",
                ctx->OutputName("Out"), "' is not supported");
  ctx->SetOutputShape("Out", ctx->GetInputShape("X"));
  ctx->SetOutputDtype("Out", dt);
  ctx->ShareLoD("X", "Out");
}

void FillAnyLikeKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  const float value = ctx.Attr<float>("value");
  VisitDtype(
      FillAnyLikeDtype(ctx.Attr<int32_t>("dtype"), x.dtype(), ctx.type()),
      [&](auto zero) {
        using T = decltype(zero);
        T* p = out->mutable_data<T>(x.shape());
        std::fill(p, p + out->numel(), static_cast<T>(value));
      });
}

}  // namespace

REGISTER_OP(fill_any_like)
    .Doc("Out = value everywhere, shaped like X (only X's shape is read).")
    .Input("X", "any tensor; its shape is Out's")
    .Output("Out", "X's shape, of dtype")
    .Attr<float>("value", 0.0f, "the value")
    .Attr<int32_t>("dtype", -1, "Out's dtype (DataType's numbering); -1: X's")
    .InRange(-1, kMaxDataType)
    .SetInferShape(FillAnyLikeInferShape)
    .AnyDtypeKernel(FillAnyLikeKernel);

}  // namespace ops
}  // namespace fluid
