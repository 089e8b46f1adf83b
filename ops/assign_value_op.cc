// assign_value: Out = constant values held by the op itself, of a given
// shape and dtype: fp32_values for float32, int32_values for int32,
// int64_values for int64 (the layer `assign` writes NumPy arrays this way).
// Out is a constant: no gradient.
#include "ops/assign_value_op.h"

#include <algorithm>
#include <string>
#include <vector>

#include "ops/dtype_visit.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

template <>
const std::vector<float>& AssignValues<float>(const ExecutionContext& ctx) {
  return ctx.Attr<std::vector<float>>("fp32_values");
}
template <>
const std::vector<int32_t>& AssignValues<int32_t>(const ExecutionContext& ctx) {
  return ctx.Attr<std::vector<int32_t>>("int32_values");
}
template <>
const std::vector<int64_t>& AssignValues<int64_t>(const ExecutionContext& ctx) {
  return ctx.Attr<std::vector<int64_t>>("int64_values");
}

namespace {

// The number of values the attr of `dtype` holds.
size_t ValueCount(const InferShapeContext& ctx, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return ctx.Attr<std::vector<float>>("fp32_values").size();
    case DataType::kInt32:
      return ctx.Attr<std::vector<int32_t>>("int32_values").size();
    case DataType::kInt64:
      return ctx.Attr<std::vector<int64_t>>("int64_values").size();
    default:
      FLUID_THROW(ErrorCode::kInvalidArgument, "assign_value: dtype ", dtype,
                  " of Out '", ctx.OutputName("Out"),
                  "' is not float32, int32 or int64");
  }
}

void AssignValueInferShape(InferShapeContext* ctx) {
  const Shape shape(ctx->Attr<std::vector<int64_t>>("shape"));
  const DataType dtype =
      DtypeAttr(ctx->Attr<int32_t>("dtype"), "assign_value", "dtype");
  FLUID_ENFORCE(shape.IsFullyKnown(), "assign_value: shape ", shape,
                " of Out '", ctx->OutputName("Out"), "' must be known");
  const size_t n = ValueCount(*ctx, dtype);
  FLUID_ENFORCE(static_cast<int64_t>(n) == shape.numel(), "assign_value: ", n,
                " values for Out '", ctx->OutputName("Out"), "' of shape ",
                shape);
  ctx->SetOutputShape("Out", shape);
  ctx->SetOutputDtype("Out", dtype);
}

template <typename T>
void AssignValueKernel(const ExecutionContext& ctx) {
  const std::vector<T>& values = AssignValues<T>(ctx);
  std::copy(values.begin(), values.end(), ctx.Output("Out")->mutable_data<T>());
}

}  // namespace

REGISTER_OP(assign_value)
    .Doc("Out = the values held in the op's attrs.")
    .Output("Out", "the constant")
    .Attr<std::vector<int64_t>>("shape", {}, "Out's shape")
    .Attr<int32_t>("dtype", static_cast<int32_t>(DataType::kFloat32),
                   "Out's dtype: 0 float32, 2 int32, 3 int64")
    .Attr<std::vector<float>>("fp32_values", {}, "values, for float32")
    .Attr<std::vector<int32_t>>("int32_values", {}, "values, for int32")
    .Attr<std::vector<int64_t>>("int64_values", {}, "values, for int64")
    .SetInferShape(AssignValueInferShape)
    .CPUKernel<float>(AssignValueKernel<float>)
    .CPUKernel<int32_t>(AssignValueKernel<int32_t>)
    .CPUKernel<int64_t>(AssignValueKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
