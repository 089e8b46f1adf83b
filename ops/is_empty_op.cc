// is_empty: Out = whether X holds no element (bool [1]), Fluid's op behind
// fluid.layers.is_empty (a loop's or a branch's condition). It reads X's
// shape alone, never its data, so one kernel serves every place and dtype:
// it writes the answer on the host and copies it to Out's place. No
// gradient (the output is a bool).
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

void IsEmptyInferShape(InferShapeContext* ctx) {
  ctx->SetOutputShape("Out", Shape({1}));
  ctx->SetOutputDtype("Out", DataType::kBool);
}

void IsEmptyKernel(const ExecutionContext& ctx) {
  // A tensor of 0 elements may own no memory: its shape is the answer, so
  // X is read as a var (ctx.Input refuses a tensor without memory).
  const Tensor& x = ctx.InputVar("X")->GetTensor();
  FLUID_ENFORCE(x.initialized() || x.numel() == 0, "is_empty: X '",
                ctx.InputName("X"), "' holds no value");
  Tensor host(DataType::kBool, Shape({1}));
  host.mutable_data<bool>()[0] = x.numel() == 0;
  ctx.Output("Out")->CopyFrom(host, ctx.place());
}

}  // namespace

REGISTER_OP(is_empty)
    .Doc("Out = whether X has 0 elements (bool [1]).")
    .Input("X", "a tensor of any dtype and shape")
    .Output("Out", "bool [1]")
    .SetInferShape(IsEmptyInferShape)
    .AnyPlaceKernel(IsEmptyKernel);

}  // namespace ops
}  // namespace fluid
