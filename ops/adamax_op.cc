// adamax: Fluid's Adamax (AdamaxFunctor in state_optimizer.h):
//   Moment = beta1 * Moment + (1 - beta1) * Grad
//   InfNorm = max(beta2 * InfNorm + epsilon, |Grad|)
//   ParamOut = Param - lr / (1 - Beta1Pow) * Moment / InfNorm
// Beta1Pow is beta1^t; the optimizer advances it with a scale op after this
// op, as Fluid does. torch.optim.Adamax adds eps to |Grad| instead; with
// epsilon 0 both agree.
#include "ops/state_optimizer_cpu.h"

namespace fluid {
namespace ops {

template <typename T>
void AdamaxKernel(const ExecutionContext& ctx) {
  StateOptimizerCpuKernel<T, AdamaxFunctor<T>>(ctx);
}

REGISTER_OP(adamax)
    .Doc("Adamax: Adam with the infinity norm of past gradients.")
    .Input("Param", "the parameter")
    .Input("Grad", "its gradient, shaped like Param")
    .Input("Moment", "the first moment, shaped like Param")
    .Input("InfNorm", "the decayed infinity norm, shaped like Param")
    .Input("LearningRate", "a one-element float32 or float64 tensor")
    .Input("Beta1Pow", "beta1^t at step t, one element")
    .Output("ParamOut", "the updated parameter; normally Param itself")
    .Output("MomentOut", "normally Moment itself")
    .Output("InfNormOut", "normally InfNorm itself")
    .Attr<float>("beta1", 0.9f, "decay of the first moment")
    .InRange(0, 1)
    .Attr<float>("beta2", 0.999f, "decay of the infinity norm")
    .InRange(0, 1)
    .Attr<float>("epsilon", 1e-8f, "added to the decayed norm")
    .InRange(0, kNoUpperBound)
    .SetInferShape(StateOptimizerShapes<AdamaxFunctor<float>>)
    .CPUKernel<float>(AdamaxKernel<float>)
    .CPUKernel<double>(AdamaxKernel<double>);

}  // namespace ops
}  // namespace fluid
