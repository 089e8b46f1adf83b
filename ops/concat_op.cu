// CUDA kernels for concat and concat_grad (schemas and shape inference in
// concat_op.cc): one launch per piece.
#include "ops/concat_split.cuh"
#include "ops/half_math.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void ConcatKernel(const ExecutionContext& ctx) {
  Tensor* out = ctx.Output("Out");
  if (out == nullptr) return;
  T* o = out->mutable_data<T>(ctx.place());
  ForEachPiece(
      out->shape(), AxisAttr(ctx, out->shape(), ctx.OutputName("Out")),
      ctx.InputSize("X"), [&](size_t i) { return ctx.Input("X", i).shape(); },
      [&](size_t i, const PieceColumns& c) {
        cuda::CopyPieceColumns(ctx, c, ctx.Input("X", i).data<T>(), o, true);
      });
}

template <typename T>
void ConcatGradKernel(const ExecutionContext& ctx) {
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const std::string dx = GradSlot("X");
  ForEachPiece(
      dout.shape(), AxisAttr(ctx, dout.shape(), ctx.InputName(GradSlot("Out"))),
      ctx.InputSize("X"), [&](size_t i) { return ctx.Input("X", i).shape(); },
      [&](size_t i, const PieceColumns& c) {
        if (!ctx.HasOutput(dx, i)) return;
        cuda::CopyPieceColumns(ctx, c, dout.data<T>(),
                               ctx.Output(dx, i)->mutable_data<T>(ctx.place()),
                               false);
      });
}

}  // namespace

REGISTER_FLOAT_KERNELS(concat, kCUDA, ConcatKernel);
REGISTER_HALF_KERNELS(concat, kCUDA, ConcatKernel);
REGISTER_FLOAT_KERNELS(concat_grad, kCUDA, ConcatGradKernel);
REGISTER_HALF_KERNELS(concat_grad, kCUDA, ConcatGradKernel);

}  // namespace ops
}  // namespace fluid
