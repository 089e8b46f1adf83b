// elementwise_mul: Out = X * Y, with Y broadcast onto X (see
// elementwise_op_function.h).
#include "ops/elementwise_op_function.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void ElementwiseMulKernel(const ExecutionContext& ctx) {
  ElementwiseForward<T>(ctx, MulFunctor());
}

template <typename T>
void ElementwiseMulGradKernel(const ExecutionContext& ctx) {
  const auto& [x, y, dout, d] = ReadElementwiseGradArgs(ctx);
  // dY first: when X@GRAD is the same var as X (never emitted by the
  // autodiff, but cheap to allow) X is still intact here.
  if (Tensor* dy = ctx.Output(GradSlot("Y"))) {
    ReduceToY<T, true>(ctx.device(), d, dout.data<T>(), x.data<T>(),
                       dy->mutable_data<T>());
  }
  // dX = dOut * Y, broadcast exactly as in the forward.
  if (Tensor* dx = ctx.Output(GradSlot("X"))) {
    ElementwiseCompute<T>(ctx.device(), d, dout.data<T>(), y.data<T>(),
                          dx->mutable_data<T>(), MulFunctor());
  }
}

}  // namespace

REGISTER_OP(elementwise_mul)
    .Doc("Out = X * Y, Y broadcast onto a run of X's dims starting at axis.")
    .Input("X", "the larger operand; Out has its shape")
    .Input("Y", "the operand broadcast onto X")
    .Output("Out", "X * Y, shaped like X")
    .Attr<int32_t>("axis", -1,
                   "X dim that Y's first dim lines up with; -1: rank(X) - "
                   "rank(Y)")
    .InRange(-1, Shape::kMaxRank - 1)
    .SetInferShape(ElementwiseInferShape)
    .SetGrad(GradSpec("elementwise_mul_grad")
                 .Inputs({"X", "Y"})
                 .OutGrads({"Out"})
                 .InGrads({"X", "Y"}))
    .CPUKernel<float>(ElementwiseMulKernel<float>)
    .CPUKernel<double>(ElementwiseMulKernel<double>);

REGISTER_GRAD_OP(elementwise_mul_grad)
    .Doc(
        "dX = dOut * Y (broadcast); dY = sum of dOut * X over the dims Y "
        "was broadcast along.")
    .SetInferShape(ElementwiseGradInferShape)
    .CPUKernel<float>(ElementwiseMulGradKernel<float>)
    .CPUKernel<double>(ElementwiseMulGradKernel<double>);

}  // namespace ops
}  // namespace fluid
