// fill_constant_batch_size_like: Out = value, of the `shape` attr with its
// dim output_dim_idx replaced by Input's dim input_dim_idx (the batch size
// of Input, known only at run time). Input's values are not read and no
// gradient flows to it.
#include <algorithm>
#include <vector>

#include "ops/dtype_visit.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

void FillBatchSizeLikeInferShape(InferShapeContext* ctx) {
  const auto& spec = ctx->Attr<std::vector<int64_t>>("shape");
  const int in_idx = ctx->Attr<int32_t>("input_dim_idx");
  const int out_idx = ctx->Attr<int32_t>("output_dim_idx");
  const Shape in = ctx->GetInputShape("Input");
  const std::string& op = ctx->op_type();
  FLUID_ENFORCE(in_idx >= 0 && in_idx < in.rank(), op,
                ": attr input_dim_idx=", in_idx, " is out of range for Input '",
                ctx->InputName("Input"), "' ", in);
  FLUID_ENFORCE(out_idx >= 0 && out_idx < static_cast<int>(spec.size()), op,
                ": attr output_dim_idx=", out_idx,
                " is out of range for attr shape ", Shape(spec));
  Shape out(spec);
  out[out_idx] = in[in_idx];
  for (int i = 0; i < out.rank(); ++i) {
    FLUID_ENFORCE(i == out_idx || out[i] >= 0, op, ": attr shape ", Shape(spec),
                  " of '", ctx->OutputName("Out"),
                  "' must be known but at output_dim_idx=", out_idx);
  }
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out",
                      static_cast<DataType>(ctx->Attr<int32_t>("dtype")));
}

// Registered for every dtype of Input (which it does not read); Out's
// dtype is the attr's.
void FillBatchSizeLikeKernel(const ExecutionContext& ctx) {
  Tensor* out = ctx.Output("Out");
  const float value = ctx.Attr<float>("value");
  VisitDtype(DtypeAttr(ctx.Attr<int32_t>("dtype"), ctx.type(), "dtype"),
             [&](auto zero) {
               using T = decltype(zero);
               T* p = out->mutable_data<T>();
               std::fill(p, p + out->numel(), static_cast<T>(value));
             });
}

}  // namespace

REGISTER_OP(fill_constant_batch_size_like)
    .Doc(
        "Fills Out with `value`; Out has the shape attr with dim "
        "output_dim_idx taken from Input's dim input_dim_idx.")
    .Input("Input", "the tensor whose dim gives the batch size (not read)")
    .Output("Out", "the constant")
    .Attr<std::vector<int64_t>>("shape", {}, "shape of Out")
    .Attr<int32_t>("dtype", static_cast<int32_t>(DataType::kFloat32),
                   "element type of Out")
    .Attr<float>("value", 0.0f, "the value")
    .Attr<int32_t>("input_dim_idx", 0, "the dim of Input to copy")
    .Attr<int32_t>("output_dim_idx", 0, "the dim of Out it sets")
    .SetInferShape(FillBatchSizeLikeInferShape)
    .CPUKernel<float>(FillBatchSizeLikeKernel)
    .CPUKernel<double>(FillBatchSizeLikeKernel)
    .CPUKernel<int32_t>(FillBatchSizeLikeKernel)
    .CPUKernel<int64_t>(FillBatchSizeLikeKernel);

}  // namespace ops
}  // namespace fluid
