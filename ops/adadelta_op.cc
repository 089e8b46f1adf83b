// adadelta: Fluid's Adadelta (AdadeltaFunctor in state_optimizer.h):
//   AvgSquaredGrad = rho * AvgSquaredGrad + (1 - rho) * Grad^2
//   update = -sqrt((AvgSquaredUpdate + epsilon) / (AvgSquaredGrad + epsilon))
//            * Grad
//   AvgSquaredUpdate = rho * AvgSquaredUpdate + (1 - rho) * update^2
//   ParamOut = Param + update
// Like Fluid's op it has no learning rate; torch.optim.Adadelta(lr=1.0)
// computes the same.
#include "ops/state_optimizer_cpu.h"

namespace fluid {
namespace ops {

template <typename T>
void AdadeltaKernel(const ExecutionContext& ctx) {
  StateOptimizerCpuKernel<T, AdadeltaFunctor<T>>(ctx);
}

REGISTER_OP(adadelta)
    .Doc(
        "Adadelta: steps scaled by the ratio of decayed RMS update to RMS "
        "gradient; no learning rate.")
    .Input("Param", "the parameter")
    .Input("Grad", "its gradient, shaped like Param")
    .Input("AvgSquaredGrad", "decayed mean of squared gradients")
    .Input("AvgSquaredUpdate", "decayed mean of squared updates")
    .Output("ParamOut", "the updated parameter; normally Param itself")
    .Output("AvgSquaredGradOut", "normally AvgSquaredGrad itself")
    .Output("AvgSquaredUpdateOut", "normally AvgSquaredUpdate itself")
    .Attr<float>("rho", 0.95f, "the decay of the means")
    .InRange(0, 1)
    .Attr<float>("epsilon", 1e-6f, "added to both means")
    .InRange(0, kNoUpperBound)
    .SetInferShape(StateOptimizerShapes<AdadeltaFunctor<float>>)
    .CPUKernel<float>(AdadeltaKernel<float>)
    .CPUKernel<double>(AdadeltaKernel<double>);

}  // namespace ops
}  // namespace fluid
