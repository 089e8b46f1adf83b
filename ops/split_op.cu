// CUDA kernel for split (schema, shape inference and grad maker in
// split_op.cc): one launch per piece.
#include "ops/concat_split.cuh"
#include "ops/half_math.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void SplitKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  ForEachPiece(
      x.shape(), AxisAttr(ctx, x.shape(), ctx.InputName("X")),
      ctx.OutputSize("Out"),
      [&](size_t i) { return ctx.Output("Out", i)->shape(); },
      [&](size_t i, const PieceColumns& c) {
        cuda::CopyPieceColumns(
            ctx, c, x.data<T>(),
            ctx.Output("Out", i)->mutable_data<T>(ctx.place()), false);
      });
}

}  // namespace

REGISTER_FLOAT_KERNELS(split, kCUDA, SplitKernel);
REGISTER_HALF_KERNELS(split, kCUDA, SplitKernel);
// Integer pieces: a pipeline cuts its feeds (ids, labels) into micro-batches.
REGISTER_KERNEL(split, kCUDA, int32_t, SplitKernel<int32_t>);
REGISTER_KERNEL(split, kCUDA, int64_t, SplitKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
