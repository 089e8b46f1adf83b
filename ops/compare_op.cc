// The compare ops: less_than, less_equal, greater_than, greater_equal,
// equal, not_equal. Out = X <op> Y elementwise, a bool tensor shaped like X;
// Y is broadcast onto X at `axis` as the elementwise ops do
// (ops/broadcast_dims.h). Not differentiable. `force_cpu` is Fluid's attr
// for keeping Out on the host; kernels here run where the executor runs.
#include "ops/compare_op.h"

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

BroadcastDims CompareDims(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  FLUID_ENFORCE(x.dtype() == y.dtype(), ctx.type(), ": X '", ctx.InputName("X"),
                "' is ", DataTypeName(x.dtype()), " but Y '",
                ctx.InputName("Y"), "' is ", DataTypeName(y.dtype()));
  return GetBroadcastDims(ctx, x, y);
}

namespace {

void CompareInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  GetBroadcastDims(ctx->op_type(), ctx->InputName("X"), x, ctx->InputName("Y"),
                   ctx->GetInputShape("Y"), ctx->Attr<int32_t>("axis"));
  FLUID_ENFORCE(ctx->GetInputDtype("X") == ctx->GetInputDtype("Y"),
                ctx->op_type(), ": X '", ctx->InputName("X"), "' is ",
                DataTypeName(ctx->GetInputDtype("X")), " but Y '",
                ctx->InputName("Y"), "' is ",
                DataTypeName(ctx->GetInputDtype("Y")),
                "; compare tensors of one dtype (cast one of them)");
  ctx->SetOutputShape("Out", x);
  ctx->SetOutputDtype("Out", DataType::kBool);
  ctx->ShareLoD("X", "Out");
}

// out[i, j, k] = f(x[i, j, k], y[j]) over X viewed as [pre, n, post].
template <typename T, typename F>
void CompareKernel(const ExecutionContext& ctx) {
  const BroadcastDims d = CompareDims(ctx);
  const Tensor& x = ctx.Input("X");
  const T* xp = x.data<T>();
  const T* yp = ctx.Input("Y").data<T>();
  bool* out = ctx.Output("Out")->mutable_data<bool>(x.shape());
  const F f;
  int64_t idx = 0;
  for (int64_t i = 0; i < d.pre; ++i)
    for (int64_t j = 0; j < d.n; ++j)
      for (int64_t k = 0; k < d.post; ++k, ++idx) out[idx] = f(xp[idx], yp[j]);
}

template <typename F>
void RegisterCompare(const char* type, const char* doc) {
  OpRegistry::Global()
      .Register(type)
      .Doc(doc)
      .Input("X", "the left operand; Out has its shape")
      .Input("Y", "the right operand, broadcast onto X (one dtype with X)")
      .Output("Out", "the bool result, shaped like X")
      .Attr<int32_t>("axis", -1,
                     "X dim that Y's first dim lines up with; -1: rank(X) - "
                     "rank(Y)")
      .InRange(-1, Shape::kMaxRank - 1)
      .Attr<bool>("force_cpu", false,
                  "Fluid's request to keep Out on the host; the kernel runs "
                  "where the executor runs")
      .SetInferShape(CompareInferShape)
      .template CPUKernel<float>(CompareKernel<float, F>)
      .template CPUKernel<double>(CompareKernel<double, F>)
      .template CPUKernel<int32_t>(CompareKernel<int32_t, F>)
      .template CPUKernel<int64_t>(CompareKernel<int64_t, F>);
}

[[maybe_unused]] const bool kRegistered = [] {
  RegisterCompare<LessThanFunctor>("less_than", "Out = X < Y, elementwise.");
  RegisterCompare<LessEqualFunctor>("less_equal", "Out = X <= Y, elementwise.");
  RegisterCompare<GreaterThanFunctor>("greater_than",
                                      "Out = X > Y, elementwise.");
  RegisterCompare<GreaterEqualFunctor>("greater_equal",
                                       "Out = X >= Y, elementwise.");
  RegisterCompare<EqualFunctor>("equal", "Out = X == Y, elementwise.");
  RegisterCompare<NotEqualFunctor>("not_equal", "Out = X != Y, elementwise.");
  return true;
}();

}  // namespace
}  // namespace ops
}  // namespace fluid
