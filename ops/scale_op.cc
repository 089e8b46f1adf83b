// scale: Out = scale * X + bias, or scale * (X + bias) when
// bias_after_scale is false. Its gradient is itself a scale op (of
// Out@GRAD, by the same factor, with no bias), and the gradient of `sum`
// uses it as a copy. bfloat16 and float16 compute in float.
#include <string>

#include "ops/half_cpu.h"
#include "ops/op_helpers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace ops {
namespace {

// scale of 16-bit X: the same three forms in float, rounded once.
template <typename T>
void HalfScaleKernel(const ExecutionContext& ctx, const Tensor& x,
                     Tensor* out) {
  const float scale = ctx.Attr<float>("scale");
  const float bias = ctx.Attr<float>("bias");
  const bool after = ctx.Attr<bool>("bias_after_scale");
  HalfChunks(ctx.device(), x.numel(), 1.0, x.data<T>(),
             static_cast<const T*>(nullptr), out->mutable_data<T>(),
             [=](const float* a, const float*, float* o, int64_t len) {
               for (int64_t i = 0; i < len; ++i) {
                 if (bias == 0.0f) {
                   o[i] = a[i] * scale;
                 } else if (after) {
                   o[i] = a[i] * scale + bias;
                 } else {
                   o[i] = (a[i] + bias) * scale;
                 }
               }
             });
}

// scale of float or double X.
template <typename T>
void EigenScaleKernel(const ExecutionContext& ctx, const Tensor& x,
                      Tensor* out) {
  const T scale = static_cast<T>(ctx.Attr<float>("scale"));
  const T bias = static_cast<T>(ctx.Attr<float>("bias"));
  out->mutable_data<T>();
  if (bias == T(0)) {
    Assign(ctx.device(), Vec<T>(out), Vec<T>(x) * scale);
  } else if (ctx.Attr<bool>("bias_after_scale")) {
    Assign(ctx.device(), Vec<T>(out), Vec<T>(x) * scale + bias);
  } else {
    Assign(ctx.device(), Vec<T>(out), (Vec<T>(x) + bias) * scale);
  }
}

template <typename T>
void ScaleKernel(const ExecutionContext& ctx) {
  // An unneeded gradient (Out bound to the empty name) is not computed.
  if (!ctx.HasOutput("Out")) return;
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  if constexpr (IsHalfType<T>::value) {
    HalfScaleKernel<T>(ctx, x, out);
  } else {
    EigenScaleKernel<T>(ctx, x, out);
  }
}

// d(scale * X + b)/dX = scale whichever side the bias is on.
std::vector<proto::OpDesc> ScaleGradMaker(const proto::OpDesc& fwd) {
  proto::OpDesc g = MakeGradOp(fwd, GradSpec("scale"));
  SetOpInput(&g, "X", {GradVarName(OpOutput(fwd, "Out").at(0))});
  SetOpOutput(&g, "Out", {GradVarName(OpInput(fwd, "X").at(0))});
  SetOpAttr(&g, "bias", 0.0f);
  SetOpAttr(&g, "bias_after_scale", true);
  return {g};
}

}  // namespace

REGISTER_OP(scale)
    .Doc("Out = scale * X + bias (or scale * (X + bias)).")
    .Input("X", "input")
    .Output("Out", "scaled and shifted X, same shape; may be X itself")
    .Attr<float>("scale", 1.0f, "the factor")
    .Attr<float>("bias", 0.0f, "the shift")
    .Attr<bool>("bias_after_scale", true,
                "true: scale * X + bias; false: scale * (X + bias)")
    .SetInferShape([](InferShapeContext* ctx) { ctx->ShareShape("X", "Out"); })
    .SetGradMaker(ScaleGradMaker)
    .CPUKernel<float>(ScaleKernel<float>)
    .CPUKernel<double>(ScaleKernel<double>)
    .CPUKernel<bfloat16>(ScaleKernel<bfloat16>)
    .CPUKernel<float16>(ScaleKernel<float16>);

}  // namespace ops
}  // namespace fluid
