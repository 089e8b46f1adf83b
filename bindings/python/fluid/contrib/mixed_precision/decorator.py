"""decorate(optimizer): the optimizer whose minimize trains in mixed
precision."""
from ... import framework
from .fp16_lists import AutoMixedPrecisionLists


class OptimizerWithMixedPrecision:
    """An optimizer whose minimize builds the float32 training program and
    rewrites it to mixed precision (see fluid.contrib.mixed_precision).
    Made by decorate(); its arguments are decorate's."""

    def __init__(self, optimizer, amp_lists, init_loss_scaling,
                 use_dynamic_loss_scaling, incr_every_n_steps,
                 decr_every_n_nan_or_inf, incr_ratio, decr_ratio, use_bf16):
        self._optimizer = optimizer
        self._amp_lists = amp_lists
        self._dtype = "bf16" if use_bf16 else "fp16"
        self._scaling = {
            "init_loss_scaling": float(init_loss_scaling),
            "use_dynamic_loss_scaling": bool(use_dynamic_loss_scaling),
            "incr_every_n_steps": int(incr_every_n_steps),
            "decr_every_n_nan_or_inf": int(decr_every_n_nan_or_inf),
            "incr_ratio": float(incr_ratio),
            "decr_ratio": float(decr_ratio)}
        # Checked now, not at minimize: the ranges are the strategy's.
        self._config = amp_lists._config_bytes(self._dtype, **self._scaling)
        self._program = None
        self._scaled_loss = None

    def minimize(self, loss, startup_program=None, parameter_list=None,
                 no_grad_set=None):
        """The wrapped optimizer's minimize, then the rewrite of loss's
        program to mixed precision. Returns what the optimizer's minimize
        returns (optimize_ops, params_grads); the parameters and gradients
        stay float32."""
        out = self._optimizer.minimize(loss, startup_program, parameter_list,
                                       no_grad_set)
        b, program = framework.current_builder()
        b.mixed_precision(self._config)
        # Around a RecomputeOptimizer: the backward pass the rewrite
        # regenerated is made to recompute again.
        recompute = getattr(program, "_recompute_strategy", None)
        if recompute is not None:
            b.recompute(recompute)
        self._program = program
        if self._dtype == "fp16":
            self._scaled_loss = program.var(loss.name + ".scaled")
        return out

    def get_loss_scaling(self):
        """The loss scaling (a persistable float32 Variable of shape [1]
        that can be fetched), after minimize; None with bf16, which needs
        no loss scaling."""
        if self._dtype == "bf16":
            return None
        if self._program is None:
            raise RuntimeError("get_loss_scaling(): call minimize() first; "
                               "the loss scaling is created with the "
                               "rewritten program")
        return self._program.var("loss_scaling")

    def get_scaled_loss(self):
        """The loss times the loss scaling (fp16), after minimize; None with
        bf16."""
        if self._dtype == "bf16":
            return None
        if self._scaled_loss is None:
            raise RuntimeError("get_scaled_loss(): call minimize() first")
        return self._scaled_loss

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._optimizer, name)


def decorate(optimizer, amp_lists=None, init_loss_scaling=2.0**15,
             incr_every_n_steps=1000, decr_every_n_nan_or_inf=2,
             incr_ratio=2.0, decr_ratio=0.8, use_dynamic_loss_scaling=True,
             use_bf16=False):
    """`optimizer` wrapped so that its minimize trains in mixed precision
    (Fluid 1.x's fluid.contrib.mixed_precision.decorate, with its argument
    names and defaults).

    amp_lists: an AutoMixedPrecisionLists (None: the defaults).
    use_bf16=False trains in float16 with loss scaling: the loss is
    multiplied by a scale (init_loss_scaling) before differentiation, the
    gradients divided by it; with use_dynamic_loss_scaling the scale is
    multiplied by incr_ratio after incr_every_n_steps finite steps and by
    decr_ratio after decr_every_n_nan_or_inf steps whose gradients
    overflowed, and such a step's update is skipped. use_bf16=True trains in
    bfloat16, which has float32's range: no loss scaling (the scaling
    arguments are then unused).

        >>> opt = fluid.optimizer.Adam(learning_rate=1e-3)
        >>> opt = fluid.contrib.mixed_precision.decorate(opt, use_bf16=True)
        >>> opt.minimize(loss)
    """
    if amp_lists is None:
        amp_lists = AutoMixedPrecisionLists()
    if not isinstance(amp_lists, AutoMixedPrecisionLists):
        raise TypeError("decorate(amp_lists=...) takes an "
                        f"AutoMixedPrecisionLists, got {amp_lists!r}")
    if not hasattr(optimizer, "minimize"):
        raise TypeError(f"decorate(optimizer=...) takes a fluid.optimizer "
                        f"optimizer, got {optimizer!r}")
    return OptimizerWithMixedPrecision(
        optimizer, amp_lists, init_loss_scaling, use_dynamic_loss_scaling,
        incr_every_n_steps, decr_every_n_nan_or_inf, incr_ratio, decr_ratio,
        use_bf16)
