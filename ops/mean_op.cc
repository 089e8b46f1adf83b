// mean: Out[0] = the mean of all elements of X; usually the last op of a
// loss.
#include "ops/mean_op.h"

#include <algorithm>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

const Tensor& GetMeanInput(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  FLUID_ENFORCE(x.numel() > 0, "mean: X '", ctx.InputName("X"), "' of shape ",
                x.shape(), " has no elements");
  return x;
}

MeanGradArgs ReadMeanGradArgs(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.numel() == 1, "mean_grad: Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' must hold one element, ",
                "its shape is ", dout.shape());
  return {dout, x.numel()};
}

namespace {

void MeanInferShape(InferShapeContext* ctx) {
  ctx->SetOutputShape("Out", Shape({1}));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
}

template <typename T>
void MeanKernel(const ExecutionContext& ctx) {
  const Tensor& x = GetMeanInput(ctx);
  Tensor* out = ctx.Output("Out");
  const int64_t n = x.numel();
  // Accumulated in double: a float sum over a large batch loses digits.
  Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> v(x.data<T>(), n);
  double sum = v.template cast<double>().sum();
  out->mutable_data<T>()[0] = static_cast<T>(sum / static_cast<double>(n));
}

void MeanGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", GradSlot("X"));
}

template <typename T>
void MeanGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const MeanGradArgs a = ReadMeanGradArgs(ctx);
  const T g = a.dout.data<T>()[0] / static_cast<T>(a.numel);
  T* p = dx->mutable_data<T>();
  ParallelFor(ctx.device(), dx->numel(), 1.0,
              [&](int64_t b, int64_t e) { std::fill(p + b, p + e, g); });
}

}  // namespace

REGISTER_OP(mean)
    .Doc("Out = mean of all elements of X, as a one-element tensor.")
    .Input("X", "any non-empty tensor")
    .Output("Out", "[1], the mean")
    .SetInferShape(MeanInferShape)
    .SetGrad(
        GradSpec("mean_grad").Inputs({"X"}).OutGrads({"Out"}).InGrads({"X"}))
    .CPUKernel<float>(MeanKernel<float>)
    .CPUKernel<double>(MeanKernel<double>);

REGISTER_GRAD_OP(mean_grad)
    .Doc("dX = dOut[0] / numel(X) everywhere (only the shape of X is read).")
    .SetInferShape(MeanGradInferShape)
    .CPUKernel<float>(MeanGradKernel<float>)
    .CPUKernel<double>(MeanGradKernel<double>);

}  // namespace ops
}  // namespace fluid
