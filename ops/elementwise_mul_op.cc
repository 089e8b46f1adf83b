// elementwise_mul: Out = X * Y, with Y broadcast onto X (see
// elementwise_op_function.h). X may be sparse rows (a gradient scaled by
// GradientClipByGlobalNorm) when Y holds one element: Out is X's rows with
// their values times Y (forward only; ops/sparse_values.h).
#include "ops/elementwise_op_function.h"
#include "ops/sparse_values.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void SparseTimesScalar(const ExecutionContext& ctx) {
  const T y = SparseScaleFactor(ctx, "Y").data<T>()[0];
  const SparseInOut s = SparseValues(ctx, "X", "Out", false);
  const T* x = s.x.data<T>();
  T* out = s.out->mutable_data<T>(s.x.shape());
  ParallelFor(ctx.device(), s.x.numel(), 1.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      out[i] = FromCompute<T>(ToCompute(x[i]) * ToCompute(y));
  });
}

template <typename T>
void ElementwiseMulKernel(const ExecutionContext& ctx) {
  if (IsSparseInput(ctx, "X")) return SparseTimesScalar<T>(ctx);
  ElementwiseForward<T>(ctx, MulFunctor());
}

void ElementwiseMulInferShape(InferShapeContext* ctx) {
  if (ctx->IsSelectedRowsInput("X")) {
    const int64_t n = ctx->GetInputShape("Y").numel();
    FLUID_ENFORCE(n == 1 || n < 0, "elementwise_mul: X '", ctx->InputName("X"),
                  "' holds sparse rows, so Y '", ctx->InputName("Y"),
                  "' must hold one element, has shape ",
                  ctx->GetInputShape("Y"));
    ctx->SetOutputSelectedRows("Out");
  }
  ElementwiseInferShape(ctx);
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
    .Input("X", "the larger operand; Out has its shape; may be sparse rows")
    .Input("Y", "the operand broadcast onto X")
    .Output("Out", "X * Y, shaped like X")
    .Attr<int32_t>("axis", -1,
                   "X dim that Y's first dim lines up with; -1: rank(X) - "
                   "rank(Y)")
    .InRange(-1, Shape::kMaxRank - 1)
    .SetInferShape(ElementwiseMulInferShape)
    .SetGrad(GradSpec("elementwise_mul_grad")
                 .Inputs({"X", "Y"})
                 .OutGrads({"Out"})
                 .InGrads({"X", "Y"}))
    .CPUKernel<float>(ElementwiseMulKernel<float>)
    .CPUKernel<double>(ElementwiseMulKernel<double>)
    .CPUKernel<bfloat16>(ElementwiseMulKernel<bfloat16>)
    .CPUKernel<float16>(ElementwiseMulKernel<float16>);

REGISTER_GRAD_OP(elementwise_mul_grad)
    .Doc(
        "dX = dOut * Y (broadcast); dY = sum of dOut * X over the dims Y "
        "was broadcast along.")
    .SetInferShape(ElementwiseGradInferShape)
    .CPUKernel<float>(ElementwiseMulGradKernel<float>)
    .CPUKernel<double>(ElementwiseMulGradKernel<double>)
    .CPUKernel<bfloat16>(ElementwiseMulGradKernel<bfloat16>)
    .CPUKernel<float16>(ElementwiseMulGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
