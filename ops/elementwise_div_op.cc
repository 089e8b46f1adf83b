// elementwise_div: Out = X / Y, with Y broadcast onto X (see
// elementwise_op_function.h); the math is DivFunctor in
// elementwise_functors.h.
#include "ops/elementwise_op_function.h"

namespace fluid {
namespace ops {

REGISTER_OP(elementwise_div)
    .Doc("Out = X / Y, Y broadcast onto a run of X's dims starting at axis.")
    .Input("X", "the larger operand; Out has its shape")
    .Input("Y", "the operand broadcast onto X")
    .Output("Out", "X / Y, shaped like X")
    .Attr<int32_t>("axis", -1,
                   "X dim that Y's first dim lines up with; -1: rank(X) - "
                   "rank(Y)")
    .InRange(-1, Shape::kMaxRank - 1)
    .SetInferShape(ElementwiseInferShape)
    .SetGrad(GradSpec("elementwise_div_grad")
                 .Inputs({"X", "Y"})
                 .OutGrads({"Out"})
                 .InGrads({"X", "Y"}))
    .CPUKernel<float>(ElementwiseKernel<float, DivFunctor>)
    .CPUKernel<double>(ElementwiseKernel<double, DivFunctor>)
    .CPUKernel<bfloat16>(ElementwiseKernel<bfloat16, DivFunctor>)
    .CPUKernel<float16>(ElementwiseKernel<float16, DivFunctor>);

REGISTER_GRAD_OP(elementwise_div_grad)
    .Doc(
        "dX = dOut / Y (broadcast); dY = -dOut * X / Y^2 summed over the dims "
        "Y was broadcast along.")
    .SetInferShape(ElementwiseGradInferShape)
    .CPUKernel<float>(ElementwiseGradKernel<float, DivFunctor>)
    .CPUKernel<double>(ElementwiseGradKernel<double, DivFunctor>)
    .CPUKernel<bfloat16>(ElementwiseGradKernel<bfloat16, DivFunctor>)
    .CPUKernel<float16>(ElementwiseGradKernel<float16, DivFunctor>);

}  // namespace ops
}  // namespace fluid
