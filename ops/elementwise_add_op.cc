// elementwise_add: Out = X + Y, with Y broadcast onto X (see
// elementwise_op_function.h). The bias add of fc and conv layers; in
// bfloat16 and float16 too (computed in float, rounded once).
#include "ops/elementwise_op_function.h"
#include "src/framework/shape_only_inputs.h"

namespace fluid {
namespace ops {

ElementwiseGradArgs ReadElementwiseGradArgs(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  BroadcastDims d = GetBroadcastDims(ctx, x, y);
  FLUID_ENFORCE(dout.shape() == x.shape(), ctx.type(), ": Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " differs from X '", ctx.InputName("X"), "' ", x.shape());
  return {x, y, dout, d};
}

namespace {

template <typename T>
void ElementwiseAddKernel(const ExecutionContext& ctx) {
  ElementwiseForward<T>(ctx, AddFunctor());
}

template <typename T>
void ElementwiseAddGradKernel(const ExecutionContext& ctx) {
  const auto& [x, y, dout, d] = ReadElementwiseGradArgs(ctx);
  // dX = dOut. Copied rather than shared: X@GRAD may be a view into a
  // gradient bucket that must receive the values in place.
  if (Tensor* dx = ctx.Output(GradSlot("X"))) {
    CopyElements<T>(ctx.device(), dout.data<T>(), dx->mutable_data<T>(),
                    dout.numel());
  }
  if (Tensor* dy = ctx.Output(GradSlot("Y"))) {
    // Same shapes: dY = dOut too (a sum of one term, exact in any type).
    if (d.same_shape()) {
      CopyElements<T>(ctx.device(), dout.data<T>(), dy->mutable_data<T>(),
                      dout.numel());
    } else {
      ReduceToY<T, false>(ctx.device(), d, dout.data<T>(), nullptr,
                          dy->mutable_data<T>());
    }
  }
}

}  // namespace

REGISTER_OP(elementwise_add)
    .Doc("Out = X + Y, Y broadcast onto a run of X's dims starting at axis.")
    .Input("X", "the larger operand; Out has its shape")
    .Input("Y", "the operand broadcast onto X, e.g. a bias")
    .Output("Out", "X + Y, shaped like X")
    .Attr<int32_t>("axis", -1,
                   "X dim that Y's first dim lines up with; -1: rank(X) - "
                   "rank(Y)")
    .InRange(-1, Shape::kMaxRank - 1)
    .SetInferShape(ElementwiseInferShape)
    .SetGrad(GradSpec("elementwise_add_grad")
                 .Inputs({"X", "Y"})
                 .OutGrads({"Out"})
                 .InGrads({"X", "Y"}))
    .CPUKernel<float>(ElementwiseAddKernel<float>)
    .CPUKernel<double>(ElementwiseAddKernel<double>)
    .CPUKernel<bfloat16>(ElementwiseAddKernel<bfloat16>)
    .CPUKernel<float16>(ElementwiseAddKernel<float16>);

REGISTER_GRAD_OP(elementwise_add_grad)
    .Doc(
        "dX = dOut; dY = dOut summed over the dims Y was broadcast along. Only "
        "the shapes of the forward X and Y are read.")
    .SetInferShape(ElementwiseGradInferShape)
    .CPUKernel<float>(ElementwiseAddGradKernel<float>)
    .CPUKernel<double>(ElementwiseAddGradKernel<double>)
    .CPUKernel<bfloat16>(ElementwiseAddGradKernel<bfloat16>)
    .CPUKernel<float16>(ElementwiseAddGradKernel<float16>);
// So X, an fc layer's product before its bias, is freed after the
// forward add instead of living until the backward pass.
REGISTER_SHAPE_ONLY_INPUTS(elementwise_add_grad, "X", "Y");

}  // namespace ops
}  // namespace fluid
