// elementwise_min: Out = min(X, Y), with Y broadcast onto X (see
// elementwise_op_function.h); the math is MinFunctor in
// elementwise_functors.h. In bfloat16 and float16 too: the comparison is
// made in float, so Out is X's or Y's element unrounded, and a tie sends
// the gradient to Y as in float32; dY's sums are taken in float and
// rounded once.
#include "ops/elementwise_op_function.h"

namespace fluid {
namespace ops {

REGISTER_OP(elementwise_min)
    .Doc(
        "Out = min(X, Y), Y broadcast onto a run of X's dims starting at axis.")
    .Input("X", "the larger operand; Out has its shape")
    .Input("Y", "the operand broadcast onto X")
    .Output("Out", "min(X, Y), shaped like X")
    .Attr<int32_t>("axis", -1,
                   "X dim that Y's first dim lines up with; -1: rank(X) - "
                   "rank(Y)")
    .InRange(-1, Shape::kMaxRank - 1)
    .SetInferShape(ElementwiseInferShape)
    .SetGrad(GradSpec("elementwise_min_grad")
                 .Inputs({"X", "Y"})
                 .OutGrads({"Out"})
                 .InGrads({"X", "Y"}))
    .CPUKernel<float>(ElementwiseKernel<float, MinFunctor>)
    .CPUKernel<double>(ElementwiseKernel<double, MinFunctor>)
    .CPUKernel<bfloat16>(ElementwiseKernel<bfloat16, MinFunctor>)
    .CPUKernel<float16>(ElementwiseKernel<float16, MinFunctor>);

REGISTER_GRAD_OP(elementwise_min_grad)
    .Doc(
        "dX = dOut where X < Y, else 0; dY = dOut where X >= Y (ties go to Y), "
        "summed over the dims Y was broadcast along.")
    .SetInferShape(ElementwiseGradInferShape)
    .CPUKernel<float>(ElementwiseGradKernel<float, MinFunctor>)
    .CPUKernel<double>(ElementwiseGradKernel<double, MinFunctor>)
    .CPUKernel<bfloat16>(ElementwiseGradKernel<bfloat16, MinFunctor>)
    .CPUKernel<float16>(ElementwiseGradKernel<float16, MinFunctor>);

}  // namespace ops
}  // namespace fluid
