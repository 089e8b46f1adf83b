// sgd: ParamOut = Param - LearningRate * Grad, as torch.optim.SGD without
// momentum or weight decay. ParamOut is normally bound to the same var as
// Param (an in-place update); the kernel reads each element before writing it,
// so both bindings give the same result. A sparse Grad (SelectedRows)
// updates only the rows it touches (ops/sparse_grad.h).
#include "ops/sgd_op.h"

#include "ops/op_helpers.h"
#include "ops/optimizer_functors.h"
#include "ops/sparse_grad.h"

namespace fluid {
namespace ops {

SgdInputs GetSgdInputs(const ExecutionContext& ctx) {
  const Tensor& param = ctx.Input("Param");
  const Tensor& grad = ctx.Input("Grad");
  FLUID_ENFORCE(grad.numel() == param.numel(), "sgd: Grad '",
                ctx.InputName("Grad"), "' has shape ", grad.shape(),
                " but Param '", ctx.InputName("Param"), "' has shape ",
                param.shape());
  return {param, grad};
}

namespace {

void SgdInferShape(InferShapeContext* ctx) {
  Shape p = ctx->GetInputShape("Param");
  Shape g = ctx->GetInputShape("Grad");
  FLUID_ENFORCE(ShapesCompatible(p, g), "sgd: Grad '", ctx->InputName("Grad"),
                "' has shape ", g, " but Param '", ctx->InputName("Param"),
                "' has shape ", p);
  FLUID_ENFORCE(ctx->GetInputDtype("Grad") == ctx->GetInputDtype("Param"),
                "sgd: Grad '", ctx->InputName("Grad"), "' is ",
                DataTypeName(ctx->GetInputDtype("Grad")), " but Param '",
                ctx->InputName("Param"), "' is ",
                DataTypeName(ctx->GetInputDtype("Param")));
  int64_t lr = ctx->GetInputShape("LearningRate").numel();
  FLUID_ENFORCE(lr < 0 || lr == 1, "sgd: LearningRate '",
                ctx->InputName("LearningRate"), "' must hold one element, ",
                "has shape ", ctx->GetInputShape("LearningRate"));
  ctx->ShareShape("Param", "ParamOut");
}

template <typename T>
void SparseSgdKernel(const ExecutionContext& ctx, T lr) {
  MergedGrad<T>& m = ThreadMergedGrad<T>();
  MergeSparseGrad(ctx, &m);
  T* p = UpdatedInPlace<T>(ctx, "Param", "ParamOut");
  const SgdFunctor<T> f{lr};
  ForEachSparseElement(m, true, [&](int64_t i, T g) { p[i] = f(p[i], g); });
}

template <typename T>
void SgdKernel(const ExecutionContext& ctx) {
  const T lr = static_cast<T>(ReadScalar(ctx, "LearningRate"));
  if (HasSparseGrad(ctx)) return SparseSgdKernel<T>(ctx, lr);
  const auto& [param, grad] = GetSgdInputs(ctx);
  const T* p = param.data<T>();
  const T* g = grad.data<T>();
  Tensor* out = ctx.Output("ParamOut");
  // In place when ParamOut is Param: same tensor, same shape, same buffer.
  T* o = out->mutable_data<T>(param.shape());
  const SgdFunctor<T> f{lr};
  ParallelFor(ctx.device(), param.numel(), 2.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) o[i] = f(p[i], g[i]);
  });
}

}  // namespace

REGISTER_OP(sgd)
    .Doc("Plain stochastic gradient descent: ParamOut = Param - lr * Grad.")
    .Input("Param", "the parameter")
    .Input("Grad", "its gradient, shaped like Param (dense or sparse rows)")
    .Input("LearningRate", "a one-element float32 or float64 tensor")
    .Output("ParamOut", "the updated parameter; normally Param itself")
    .SetInferShape(SgdInferShape)
    .CPUKernel<float>(SgdKernel<float>)
    .CPUKernel<double>(SgdKernel<double>);

}  // namespace ops
}  // namespace fluid
