// shape: Out = Input's shape as an int32 tensor [rank]; any dtype of
// Input, no gradient (its output is an integer). Only Input's shape is
// read, never its elements.
#include <cstdint>
#include <vector>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

void ShapeInferShape(InferShapeContext* ctx) {
  ctx->SetOutputShape("Out", Shape({ctx->GetInputShape("Input").rank()}));
  ctx->SetOutputDtype("Out", DataType::kInt32);
}

void ShapeKernel(const ExecutionContext& ctx) {
  const Shape& s = ctx.Input("Input").shape();
  int32_t* out = ctx.Output("Out")->mutable_data<int32_t>();
  for (int d = 0; d < s.rank(); ++d) {
    FLUID_ENFORCE(s[d] <= INT32_MAX, "shape: dim ", d, " of Input '",
                  ctx.InputName("Input"), "' ", s, " does not fit int32");
    out[d] = static_cast<int32_t>(s[d]);
  }
}

}  // namespace

REGISTER_OP(shape)
    .Doc("Out = Input's shape, int32 [rank].")
    .Input("Input", "any tensor (its elements are not read)")
    .Output("Out", "int32 [rank]")
    .SetInferShape(ShapeInferShape)
    .AnyDtypeKernel(ShapeKernel);

}  // namespace ops
}  // namespace fluid
