// assign: Out = a copy of X, any dtype. Its gradient is an assign of
// Out@GRAD to X@GRAD.
#include <cstring>
#include <string>
#include <vector>

#include "ops/op_helpers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace ops {
namespace {

void AssignInferShape(InferShapeContext* ctx) { ctx->ShareShape("X", "Out"); }

void AssignKernel(const ExecutionContext& ctx) {
  Tensor* out = ctx.Output("Out");
  if (out == nullptr) return;
  const Tensor& x = ctx.Input("X");
  void* dst = out->raw_mutable_data();
  if (dst != x.raw_data()) std::memcpy(dst, x.raw_data(), x.bytes());
}

std::vector<proto::OpDesc> AssignGradMaker(const proto::OpDesc& fwd) {
  return {MakeOp("assign", {{"X", {GradVarName(OpOutput(fwd, "Out").at(0))}}},
                 {{"Out", {GradVarName(OpInput(fwd, "X").at(0))}}},
                 {{kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward)}})};
}

}  // namespace

REGISTER_OP(assign)
    .Doc("Out = a copy of X.")
    .Input("X", "input, any dtype")
    .Output("Out", "X's shape, dtype and values")
    .SetInferShape(AssignInferShape)
    .SetGradMaker(AssignGradMaker)
    .AnyDtypeKernel(AssignKernel);

}  // namespace ops
}  // namespace fluid
