// elementwise_sub: Out = X - Y, with Y broadcast onto X (see
// elementwise_op_function.h); the math is SubFunctor in
// elementwise_functors.h.
#include "ops/elementwise_op_function.h"
#include "src/framework/shape_only_inputs.h"

namespace fluid {
namespace ops {
namespace {

// dX = dOut; dY = -(dOut summed over Y's broadcast dims): negating the sum
// is exact, so this equals summing the negated terms. Reads the forward X
// and Y for their shapes only.
template <typename T>
void ElementwiseSubGradKernel(const ExecutionContext& ctx) {
  const auto& [x, y, dout, d] = ReadElementwiseGradArgs(ctx);
  // Copied rather than shared: X@GRAD may be a view into a gradient bucket.
  if (Tensor* dx = ctx.Output(GradSlot("X")))
    CopyElements<T>(ctx.device(), dout.data<T>(), dx->mutable_data<T>(),
                    dout.numel());
  Tensor* dy = ctx.Output(GradSlot("Y"));
  if (dy == nullptr) return;
  T* out = dy->mutable_data<T>();
  // Equal shapes: dY = -dOut, in one pass.
  const T* from = d.same_shape() ? dout.data<T>() : out;
  if (!d.same_shape())
    ReduceToY<T, false>(ctx.device(), d, dout.data<T>(), nullptr, out);
  ParallelFor(ctx.device(), dy->numel(), 1.0,
              [from, out](int64_t lo, int64_t hi) {
                for (int64_t i = lo; i < hi; ++i)
                  out[i] = FromCompute<T>(-ToCompute(from[i]));
              });
}

}  // namespace

REGISTER_OP(elementwise_sub)
    .Doc("Out = X - Y, Y broadcast onto a run of X's dims starting at axis.")
    .Input("X", "the larger operand; Out has its shape")
    .Input("Y", "the operand broadcast onto X")
    .Output("Out", "X - Y, shaped like X")
    .Attr<int32_t>("axis", -1,
                   "X dim that Y's first dim lines up with; -1: rank(X) - "
                   "rank(Y)")
    .InRange(-1, Shape::kMaxRank - 1)
    .SetInferShape(ElementwiseInferShape)
    .SetGrad(GradSpec("elementwise_sub_grad")
                 .Inputs({"X", "Y"})
                 .OutGrads({"Out"})
                 .InGrads({"X", "Y"}))
    .CPUKernel<float>(ElementwiseKernel<float, SubFunctor>)
    .CPUKernel<double>(ElementwiseKernel<double, SubFunctor>)
    .CPUKernel<bfloat16>(ElementwiseKernel<bfloat16, SubFunctor>)
    .CPUKernel<float16>(ElementwiseKernel<float16, SubFunctor>);

REGISTER_GRAD_OP(elementwise_sub_grad)
    .Doc(
        "dX = dOut; dY = -dOut summed over the dims Y was broadcast along. "
        "Only the shapes of the forward X and Y are read.")
    .SetInferShape(ElementwiseGradInferShape)
    .CPUKernel<float>(ElementwiseSubGradKernel<float>)
    .CPUKernel<double>(ElementwiseSubGradKernel<double>)
    .CPUKernel<bfloat16>(ElementwiseSubGradKernel<bfloat16>)
    .CPUKernel<float16>(ElementwiseSubGradKernel<float16>);
// So a difference's operands (a prediction and its label in
// square_error_cost) are freed after the forward op.
REGISTER_SHAPE_ONLY_INPUTS(elementwise_sub_grad, "X", "Y");

}  // namespace ops
}  // namespace fluid
