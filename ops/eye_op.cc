// eye: Out = batch_shape copies of the [num_rows, num_columns] identity
// (ones on the main diagonal, zeros elsewhere); num_columns -1 means
// num_rows. Behind fluid.layers.eye.
#include <algorithm>
#include <vector>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

Shape EyeShape(const std::string& op, const AttributeMap& attrs,
               const std::string& out) {
  const int64_t rows = GetAttr<int64_t>(attrs, "num_rows", op);
  int64_t cols = GetAttr<int64_t>(attrs, "num_columns", op);
  if (cols == -1) cols = rows;
  FLUID_ENFORCE(rows >= 0 && cols >= 0, op, ": num_rows=", rows,
                " and num_columns=", cols, " of '", out,
                "' must be >= 0 (num_columns -1: num_rows)");
  Shape s;
  for (int64_t d : GetAttr<std::vector<int64_t>>(attrs, "batch_shape", op)) {
    FLUID_ENFORCE(d >= 0, op, ": batch_shape of '", out,
                  "' must hold dims >= 0, has ", d);
    s.push_back(d);
  }
  FLUID_ENFORCE(s.rank() + 2 <= Shape::kMaxRank, op, ": batch_shape of '", out,
                "' has ", s.rank(), " dims; at most ", Shape::kMaxRank - 2);
  s.push_back(rows);
  s.push_back(cols);
  return s;
}

void EyeInferShape(InferShapeContext* ctx) {
  const DataType dt = static_cast<DataType>(ctx->Attr<int32_t>("dtype"));
  FLUID_ENFORCE(!IsHalfDtype(dt) && dt != DataType::kBool, "eye: dtype ",
                DataTypeName(dt), " of '", ctx->OutputName("Out"),
                "' is not supported (float32, float64, int32, int64)");
  ctx->SetOutputShape("Out",
                      EyeShape("eye", ctx->attrs(), ctx->OutputName("Out")));
  ctx->SetOutputDtype("Out", dt);
}

template <typename T>
void EyeKernel(const ExecutionContext& ctx) {
  // Shaped by the shape inference run before the kernel.
  Tensor* out = ctx.Output("Out");
  const Shape& s = out->shape();
  T* p = out->mutable_data<T>();
  const int64_t rows = s[s.rank() - 2], cols = s[s.rank() - 1];
  std::fill(p, p + out->numel(), T(0));
  for (int64_t i = 0; i < out->numel(); ++i)
    if ((i / cols) % rows == i % cols) p[i] = T(1);
}

}  // namespace

REGISTER_OP(eye)
    .Doc("Out = batch_shape copies of the [num_rows, num_columns] identity.")
    .Output("Out", "batch_shape + [num_rows, num_columns]")
    .Attr<int64_t>("num_rows", 1, "rows of each identity")
    .Attr<int64_t>("num_columns", -1, "columns of each; -1: num_rows")
    .Attr<std::vector<int64_t>>("batch_shape", {}, "leading dims of Out")
    .Attr<int32_t>("dtype", static_cast<int32_t>(DataType::kFloat32),
                   "element type of Out")
    .SetInferShape(EyeInferShape)
    .CPUKernel<float>(EyeKernel<float>)
    .CPUKernel<double>(EyeKernel<double>)
    .CPUKernel<int32_t>(EyeKernel<int32_t>)
    .CPUKernel<int64_t>(EyeKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
