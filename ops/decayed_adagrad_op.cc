// decayed_adagrad: Fluid's DecayedAdagrad (DecayedAdagradFunctor in
// state_optimizer.h), Adagrad with an exponentially decayed sum:
//   Moment = decay * Moment + (1 - decay) * Grad^2
//   ParamOut = Param - lr * Grad / (sqrt(Moment) + epsilon)
// torch.optim has no such optimizer.
#include "ops/state_optimizer_cpu.h"

namespace fluid {
namespace ops {

template <typename T>
void DecayedAdagradKernel(const ExecutionContext& ctx) {
  StateOptimizerCpuKernel<T, DecayedAdagradFunctor<T>>(ctx);
}

REGISTER_OP(decayed_adagrad)
    .Doc("Adagrad over an exponentially decayed sum of squared gradients.")
    .Input("Param", "the parameter")
    .Input("Grad", "its gradient, shaped like Param")
    .Input("Moment", "the decayed sum of squared gradients, like Param")
    .Input("LearningRate", "a one-element float32 or float64 tensor")
    .Output("ParamOut", "the updated parameter; normally Param itself")
    .Output("MomentOut", "the updated sum; normally Moment itself")
    .Attr<float>("decay", 0.95f, "the decay of the sum")
    .InRange(0, 1)
    .Attr<float>("epsilon", 1e-6f, "added to the root of the sum")
    .InRange(0, kNoUpperBound)
    .SetInferShape(StateOptimizerShapes<DecayedAdagradFunctor<float>>)
    .CPUKernel<float>(DecayedAdagradKernel<float>)
    .CPUKernel<double>(DecayedAdagradKernel<double>);

}  // namespace ops
}  // namespace fluid
