// sequence_softmax: a softmax over each sequence of a level-1 LoD batch X
// of one value per row ([rows] or [rows, 1]), as Fluid's op computes it.
// Out keeps X's shape and LoD.
#include "ops/sequence_softmax_op.h"

#include "ops/grad_checks.h"
#include "ops/op_helpers.h"
#include "ops/sequence_helpers.h"

namespace fluid {
namespace ops {
namespace {

void SequenceSoftmaxInferShape(InferShapeContext* ctx) {
  SequenceInputLoD(ctx, "X");
  const Shape x = ctx->GetInputShape("X");
  FLUID_ENFORCE(x.rank() >= 1 && (RowWidth(x) == 1 || RowWidth(x) < 0),
                "sequence_softmax: X ", Quote(ctx->InputName("X")),
                " must hold one value per row ([rows] or [rows, 1]), its "
                "shape is ",
                x);
  ctx->ShareShape("X", "Out");
}

template <typename T>
void SequenceSoftmaxKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const LoD& lod = x.lod();
  const T* xp = x.data<T>();
  T* out = ctx.Output("Out")->mutable_data<T>();
  ParallelFor(ctx.device(), LoDCount(lod), 16.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      SoftmaxSequence(xp, out, lod[i], lod[i + 1]);
  });
}

void SequenceSoftmaxGradInferShape(InferShapeContext* ctx) {
  SequenceInputLoD(ctx, "Out");
  ctx->ShareShape("Out", GradSlot("X"));
}

template <typename T>
void SequenceSoftmaxGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& out = ctx.Input("Out");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  CheckOutGradLikeOut(ctx, out, dout);
  const LoD& lod = out.lod();
  const T* y = out.data<T>();
  const T* g = dout.data<T>();
  T* dp = dx->mutable_data<T>();
  ParallelFor(ctx.device(), LoDCount(lod), 8.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      SoftmaxSequenceGrad(y, g, dp, lod[i], lod[i + 1]);
  });
}

}  // namespace

REGISTER_OP(sequence_softmax)
    .Doc("Softmax over each sequence of a level-1 LoD batch of scalars.")
    .Input("X", "[rows] or [rows, 1] with level-1 LoD")
    .Output("Out", "same shape and LoD; each sequence sums to 1")
    .Attr<bool>("use_cudnn", false, "accepted and ignored")
    .SetInferShape(SequenceSoftmaxInferShape)
    .SetGrad(GradSpec("sequence_softmax_grad")
                 .Outputs({"Out"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(SequenceSoftmaxKernel<float>)
    .CPUKernel<double>(SequenceSoftmaxKernel<double>);

REGISTER_GRAD_OP(sequence_softmax_grad)
    .Doc("dX = (dOut - sum over the sequence of dOut * Out) * Out.")
    .SetInferShape(SequenceSoftmaxGradInferShape)
    .CPUKernel<float>(SequenceSoftmaxGradKernel<float>)
    .CPUKernel<double>(SequenceSoftmaxGradKernel<double>);

}  // namespace ops
}  // namespace fluid
