// sequence_erase: removes every occurrence of the given tokens from a
// level-1 LoD batch of int32 or int64 tokens [rows, 1], as Fluid's op does
// (edit_distance's ignored_tokens). Out's rows and LoD depend on the
// values, so the kernel sizes Out. Not differentiable.
#include "ops/sequence_erase_op.h"

#include "ops/op_helpers.h"
#include "ops/sequence_helpers.h"

namespace fluid {
namespace ops {
namespace {

void SequenceEraseInferShape(InferShapeContext* ctx) {
  const DataType dt = ctx->GetInputDtype("X");
  FLUID_ENFORCE(dt == DataType::kInt32 || dt == DataType::kInt64,
                "sequence_erase: X ", Quote(ctx->InputName("X")),
                " must be int32 or int64 tokens, is ", DataTypeName(dt));
  const Shape x = ctx->GetInputShape("X");
  FLUID_ENFORCE(x.rank() == 2 && (x[1] == 1 || x[1] < 0), "sequence_erase: X ",
                Quote(ctx->InputName("X")), " has shape ", x,
                "; it must be [rows, 1] (one token a row)");
  SequenceInputLoD(ctx, "X");
  ctx->SetOutputDtype("Out", dt);
  ctx->SetOutputLoDLevel("Out", 1);
  if (!ctx->IsRuntime()) ctx->SetOutputShape("Out", Shape({-1, 1}));
}

template <typename T>
void SequenceEraseKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const auto& tokens = ctx.Attr<std::vector<int32_t>>("tokens");
  std::vector<T> kept(static_cast<size_t>(x.numel()));
  LoD lod;
  const int64_t n =
      EraseTokens(x.data<T>(), x.lod(), tokens, kept.data(), &lod);
  Tensor* out = ctx.Output("Out");
  T* op = out->mutable_data<T>(Shape({n, 1}));
  std::copy(kept.begin(), kept.begin() + n, op);
  out->set_lod(std::move(lod));
}

}  // namespace

REGISTER_OP(sequence_erase)
    .Doc("Removes the given tokens from each sequence of a LoD batch.")
    .Input("X", "int32 or int64 [rows, 1] with level-1 LoD")
    .Output("Out", "X's type, [kept rows, 1], the LoD of the kept rows")
    .Attr<std::vector<int32_t>>("tokens", {}, "the tokens to remove")
    .SetInferShape(SequenceEraseInferShape)
    .CPUKernel<int32_t>(SequenceEraseKernel<int32_t>)
    .CPUKernel<int64_t>(SequenceEraseKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
