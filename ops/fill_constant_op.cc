// fill_constant: Out = value, of a given shape and dtype.
// fill_zeros_like: Out = zeros shaped like X.
#include <algorithm>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

void FillConstantInferShape(InferShapeContext* ctx) {
  const auto& shape = ctx->Attr<std::vector<int64_t>>("shape");
  for (int64_t d : shape)
    FLUID_ENFORCE(d >= 0, "fill_constant: shape ", Shape(shape), " of '",
                  ctx->OutputName("Out"), "' must be fully known");
  ctx->SetOutputShape("Out", Shape(shape));
  ctx->SetOutputDtype("Out",
                      static_cast<DataType>(ctx->Attr<int32_t>("dtype")));
}

template <typename T>
void FillConstantKernel(const ExecutionContext& ctx) {
  Tensor* out = ctx.Output("Out");
  T* p = out->mutable_data<T>();
  std::fill(p, p + out->numel(), static_cast<T>(ctx.Attr<float>("value")));
}

template <typename T>
void FillZerosLikeKernel(const ExecutionContext& ctx) {
  Tensor* out = ctx.Output("Out");
  T* p = out->mutable_data<T>();
  std::fill(p, p + out->numel(), T(0));
}

}  // namespace

REGISTER_OP(fill_constant)
    .Doc("Fills Out with `value`.")
    .Output("Out")
    .Attr<std::vector<int64_t>>("shape", {}, "shape of Out")
    .Attr<float>("value", 0.0f, "the value")
    .Attr<int32_t>("dtype", static_cast<int32_t>(DataType::kFloat32),
                   "element type of Out")
    .SetInferShape(FillConstantInferShape)
    .CPUKernel<float>(FillConstantKernel<float>)
    .CPUKernel<double>(FillConstantKernel<double>)
    .CPUKernel<int32_t>(FillConstantKernel<int32_t>)
    .CPUKernel<int64_t>(FillConstantKernel<int64_t>)
    .CPUKernel<float16>(FillConstantKernel<float16>)
    .CPUKernel<bfloat16>(FillConstantKernel<bfloat16>);

REGISTER_OP(fill_zeros_like)
    .Doc("Fills Out with zeros, shaped like X.")
    .Input("X")
    .Output("Out")
    .SetInferShape([](InferShapeContext* ctx) { ctx->ShareShape("X", "Out"); })
    .CPUKernel<float>(FillZerosLikeKernel<float>)
    .CPUKernel<double>(FillZerosLikeKernel<double>)
    .CPUKernel<float16>(FillZerosLikeKernel<float16>)
    .CPUKernel<bfloat16>(FillZerosLikeKernel<bfloat16>);

}  // namespace ops
}  // namespace fluid
