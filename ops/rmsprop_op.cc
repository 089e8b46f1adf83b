// rmsprop: Fluid's RMSProp (RmspropFunctor in state_optimizer.h):
//   MeanSquare = decay * MeanSquare + (1 - decay) * Grad^2
//   Moment = momentum * Moment + lr * Grad / sqrt(MeanSquare + epsilon)
//            (centered: sqrt(MeanSquare - MeanGrad^2 + epsilon), with
//             MeanGrad = decay * MeanGrad + (1 - decay) * Grad)
//   ParamOut = Param - Moment
// torch.optim.RMSprop(alpha=decay) adds eps outside the root and applies lr
// after the momentum buffer; with epsilon 0 and a constant lr both agree.
#include "ops/state_optimizer_cpu.h"

namespace fluid {
namespace ops {

template <typename T>
void RmspropKernel(const ExecutionContext& ctx) {
  StateOptimizerCpuKernel<T, RmspropFunctor<T>>(ctx);
}

REGISTER_OP(rmsprop)
    .Doc("RMSProp, optionally centered, with momentum.")
    .Input("Param", "the parameter")
    .Input("Grad", "its gradient, shaped like Param")
    .Input("Moment", "the momentum buffer, shaped like Param")
    .Input("MeanSquare", "the decayed mean of squared gradients")
    .Input("MeanGrad", "the decayed mean of gradients (centered only)")
    .Input("LearningRate", "a one-element float32 or float64 tensor")
    .Output("ParamOut", "the updated parameter; normally Param itself")
    .Output("MomentOut", "normally Moment itself")
    .Output("MeanSquareOut", "normally MeanSquare itself")
    .Output("MeanGradOut", "normally MeanGrad itself")
    .Attr<float>("decay", 0.95f, "the decay (rho) of the means")
    .Attr<float>("epsilon", 1e-6f, "added under the root")
    .Attr<float>("momentum", 0.0f, "momentum factor")
    .Attr<bool>("centered", false, "divide by the estimated variance")
    .SetInferShape(StateOptimizerShapes<RmspropFunctor<float>>)
    .CPUKernel<float>(RmspropKernel<float>)
    .CPUKernel<double>(RmspropKernel<double>);

}  // namespace ops
}  // namespace fluid
