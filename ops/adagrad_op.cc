// adagrad: Fluid's Adagrad (AdagradFunctor in state_optimizer.h):
//   Moment += Grad^2
//   ParamOut = Param - lr * Grad / (sqrt(Moment) + epsilon)
// torch.optim.Adagrad with lr_decay 0 computes the same (its eps defaults
// to 1e-10, Fluid's to 1e-6). A sparse Grad (SelectedRows) updates the rows
// it touches (ops/sparse_grad.h); for the others a zero gradient would
// change nothing.
#include "ops/sparse_grad.h"
#include "ops/state_optimizer_cpu.h"

namespace fluid {
namespace ops {

template <typename T>
void SparseAdagradKernel(const ExecutionContext& ctx) {
  const double lr = ReadScalar(ctx, "LearningRate");
  const AdagradFunctor<T> f = AdagradFunctor<T>::Make(ctx);
  MergedGrad<T>& m = ThreadMergedGrad<T>();
  MergeSparseGrad(ctx, &m);
  T* p = UpdatedInPlace<T>(ctx, "Param", "ParamOut");
  T* moment = UpdatedInPlace<T>(ctx, "Moment", "MomentOut");
  ForEachSparseElement(m, true, [&](int64_t i, T g) {
    const T s = moment[i];
    f(lr, 0.0, p[i], g, &s, &p[i], &moment[i]);
  });
}

template <typename T>
void AdagradKernel(const ExecutionContext& ctx) {
  if (HasSparseGrad(ctx)) return SparseAdagradKernel<T>(ctx);
  StateOptimizerCpuKernel<T, AdagradFunctor<T>>(ctx);
}

REGISTER_OP(adagrad)
    .Doc("Adagrad: the step is scaled by 1 / sqrt(sum of squared gradients).")
    .Input("Param", "the parameter")
    .Input("Grad", "its gradient, shaped like Param (dense or sparse rows)")
    .Input("Moment", "the sum of squared gradients, shaped like Param")
    .Input("LearningRate", "a one-element float32 or float64 tensor")
    .Output("ParamOut", "the updated parameter; normally Param itself")
    .Output("MomentOut", "the updated sum; normally Moment itself")
    .Attr<float>("epsilon", 1e-6f, "added to the root of the sum")
    .InRange(0, kNoUpperBound)
    .SetInferShape(StateOptimizerShapes<AdagradFunctor<float>>)
    .CPUKernel<float>(AdagradKernel<float>)
    .CPUKernel<double>(AdagradKernel<double>);

}  // namespace ops
}  // namespace fluid
