"""Learning-rate schedules (Fluid's fluid.layers.learning_rate_scheduler,
exported by fluid.layers): each returns the one-element float64 Variable
holding the learning rate of the current step, computed by ops in the
program from the global step counter (@LR_DECAY_COUNTER@, persistable,
advanced by one `increment` op per run; the first run sees step 0). Pass it
as an optimizer's learning_rate. The ops are built in C++
(src/builder/lr_schedules.cc)."""
from .framework import current_builder

__all__ = ["exponential_decay", "natural_exp_decay", "inverse_time_decay",
           "polynomial_decay", "piecewise_decay", "noam_decay",
           "cosine_decay", "linear_lr_warmup"]


def _lr_schedule(kind, **args):
    """Builds schedule `kind` with `args` (its Fluid argument names)."""
    lr = args.get("learning_rate")
    if lr is not None and hasattr(lr, "name"):
        args["learning_rate"] = lr.name
    b, program = current_builder()
    return program.var(b.lr_schedule(kind, args))


def exponential_decay(learning_rate, decay_steps, decay_rate,
                      staircase=False):
    """learning_rate * decay_rate ^ (step / decay_steps) (floored when
    staircase).

        >>> lr = fluid.layers.exponential_decay(
        ...     learning_rate=0.1, decay_steps=1000, decay_rate=0.5,
        ...     staircase=True)
        >>> fluid.optimizer.SGD(learning_rate=lr).minimize(loss)
    """
    return _lr_schedule("exponential_decay", learning_rate=learning_rate,
                        decay_steps=decay_steps, decay_rate=decay_rate,
                        staircase=staircase)


def natural_exp_decay(learning_rate, decay_steps, decay_rate,
                      staircase=False):
    """learning_rate * exp(-decay_rate * step / decay_steps).

        >>> lr = fluid.layers.natural_exp_decay(0.1, decay_steps=1000,
        ...                                     decay_rate=0.5)
    """
    return _lr_schedule("natural_exp_decay", learning_rate=learning_rate,
                        decay_steps=decay_steps, decay_rate=decay_rate,
                        staircase=staircase)


def inverse_time_decay(learning_rate, decay_steps, decay_rate,
                       staircase=False):
    """learning_rate / (1 + decay_rate * step / decay_steps).

        >>> lr = fluid.layers.inverse_time_decay(0.1, decay_steps=1000,
        ...                                      decay_rate=0.5)
    """
    return _lr_schedule("inverse_time_decay", learning_rate=learning_rate,
                        decay_steps=decay_steps, decay_rate=decay_rate,
                        staircase=staircase)


def polynomial_decay(learning_rate, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False):
    """(learning_rate - end_learning_rate) * (1 - step / decay_steps) ^ power
    + end_learning_rate, step capped at decay_steps (or decay_steps
    stretched to the next multiple when cycle).

        >>> lr = fluid.layers.polynomial_decay(0.1, decay_steps=10000,
        ...                                    end_learning_rate=0.001)
    """
    return _lr_schedule("polynomial_decay", learning_rate=learning_rate,
                        decay_steps=decay_steps,
                        end_learning_rate=end_learning_rate, power=power,
                        cycle=cycle)


def piecewise_decay(boundaries, values):
    """values[i] for boundaries[i-1] <= step < boundaries[i].

        >>> lr = fluid.layers.piecewise_decay(boundaries=[1000, 2000],
        ...                                   values=[0.1, 0.01, 0.001])
    """
    return _lr_schedule("piecewise_decay", boundaries=list(boundaries),
                        values=[float(v) for v in values])


def noam_decay(d_model, warmup_steps, learning_rate=1.0):
    """learning_rate * d_model^-0.5 * min(s^-0.5, s * warmup_steps^-1.5),
    s = step + 1.

        >>> lr = fluid.layers.noam_decay(d_model=512, warmup_steps=4000)
    """
    return _lr_schedule("noam_decay", d_model=d_model,
                        warmup_steps=warmup_steps,
                        learning_rate=learning_rate)


def cosine_decay(learning_rate, step_each_epoch, epochs):
    """learning_rate / 2 * (cos(floor(step / step_each_epoch) * pi / epochs)
    + 1).

        >>> lr = fluid.layers.cosine_decay(0.1, step_each_epoch=500,
        ...                                epochs=90)
    """
    return _lr_schedule("cosine_decay", learning_rate=learning_rate,
                        step_each_epoch=step_each_epoch, epochs=epochs)


def linear_lr_warmup(learning_rate, warmup_steps, start_lr, end_lr):
    """start_lr + (end_lr - start_lr) * step / warmup_steps while step <
    warmup_steps, then learning_rate (a number or another schedule).

        >>> decayed = fluid.layers.piecewise_decay([1000], [0.1, 0.01])
        >>> lr = fluid.layers.linear_lr_warmup(decayed, warmup_steps=500,
        ...                                    start_lr=0.0, end_lr=0.1)
    """
    return _lr_schedule("linear_lr_warmup", learning_rate=learning_rate,
                        warmup_steps=warmup_steps, start_lr=start_lr,
                        end_lr=end_lr)
