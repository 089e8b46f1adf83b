"""fluid.contrib.mixed_precision: training in bfloat16 or float16 with
float32 master weights (Fluid 1.x's names).

    opt = fluid.optimizer.Momentum(learning_rate=0.1, momentum=0.9)
    opt = fluid.contrib.mixed_precision.decorate(opt, use_bf16=True)
    opt.minimize(loss)

`decorate` wraps an optimizer; its minimize builds the float32 training
program, then rewrites it (a C++ pass, the same the trainer's `--amp` and
DistributedStrategy.amp run): the matrix ops and the ops between them run in
16 bits, the losses, softmax and reductions in float32, parameters and the
optimizer stay float32. With float16 the loss is scaled dynamically and a
step whose gradients overflow is skipped. docs/mixed_precision.md has the
lists and the measurements.
"""
from .decorator import OptimizerWithMixedPrecision, decorate
from .fp16_lists import AutoMixedPrecisionLists

__all__ = ["decorate", "AutoMixedPrecisionLists",
           "OptimizerWithMixedPrecision"]
