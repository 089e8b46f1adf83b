// The logical ops: logical_and, logical_or, logical_xor (X, Y -> Out) and
// logical_not (X -> Out), elementwise on bool tensors of one shape. Not
// differentiable.
#include "ops/compare_op.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

void CheckBool(const std::string& op, const std::string& slot,
               const std::string& name, DataType dtype) {
  FLUID_ENFORCE(dtype == DataType::kBool, op, ": ", slot, " '", name, "' is ",
                DataTypeName(dtype),
                "; logical ops take bool tensors (the output of a compare "
                "op, or cast(x, 'bool'))");
}

}  // namespace

void CheckLogicalOperands(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  CheckBool(ctx.type(), "X", ctx.InputName("X"), x.dtype());
  CheckBool(ctx.type(), "Y", ctx.InputName("Y"), y.dtype());
  FLUID_ENFORCE(x.shape() == y.shape(), ctx.type(), ": X '", ctx.InputName("X"),
                "' ", x.shape(), " and Y '", ctx.InputName("Y"), "' ",
                y.shape(), " must have the same shape");
}

namespace {

void LogicalBinaryInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  const Shape y = ctx->GetInputShape("Y");
  CheckBool(ctx->op_type(), "X", ctx->InputName("X"), ctx->GetInputDtype("X"));
  CheckBool(ctx->op_type(), "Y", ctx->InputName("Y"), ctx->GetInputDtype("Y"));
  FLUID_ENFORCE(ShapesCompatible(x, y), ctx->op_type(), ": X '",
                ctx->InputName("X"), "' ", x, " and Y '", ctx->InputName("Y"),
                "' ", y, " must have the same shape");
  ctx->ShareShape("X", "Out");
}

void LogicalNotInferShape(InferShapeContext* ctx) {
  CheckBool(ctx->op_type(), "X", ctx->InputName("X"), ctx->GetInputDtype("X"));
  ctx->ShareShape("X", "Out");
}

template <typename F>
void LogicalBinaryKernel(const ExecutionContext& ctx) {
  CheckLogicalOperands(ctx);
  const Tensor& x = ctx.Input("X");
  const bool* xp = x.data<bool>();
  const bool* yp = ctx.Input("Y").data<bool>();
  bool* out = ctx.Output("Out")->mutable_data<bool>(x.shape());
  const F f;
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = f(xp[i], yp[i]);
}

void LogicalNotKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  CheckBool(ctx.type(), "X", ctx.InputName("X"), x.dtype());
  const bool* xp = x.data<bool>();
  bool* out = ctx.Output("Out")->mutable_data<bool>(x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = !xp[i];
}

template <typename F>
void RegisterLogical(const char* type, const char* doc) {
  OpRegistry::Global()
      .Register(type)
      .Doc(doc)
      .Input("X", "a bool tensor")
      .Input("Y", "a bool tensor shaped like X")
      .Output("Out", "the bool result, shaped like X")
      .SetInferShape(LogicalBinaryInferShape)
      .CPUKernel<bool>(LogicalBinaryKernel<F>);
}

[[maybe_unused]] const bool kRegistered = [] {
  RegisterLogical<LogicalAndFunctor>("logical_and",
                                     "Out = X and Y, elementwise.");
  RegisterLogical<LogicalOrFunctor>("logical_or", "Out = X or Y, elementwise.");
  RegisterLogical<LogicalXorFunctor>("logical_xor",
                                     "Out = X xor Y, elementwise.");
  OpRegistry::Global()
      .Register("logical_not")
      .Doc("Out = not X, elementwise.")
      .Input("X", "a bool tensor")
      .Output("Out", "the bool result, shaped like X")
      .SetInferShape(LogicalNotInferShape)
      .CPUKernel<bool>(LogicalNotKernel);
  return true;
}();

}  // namespace
}  // namespace ops
}  // namespace fluid
