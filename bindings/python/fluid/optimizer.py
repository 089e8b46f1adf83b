"""Optimizers: minimize(loss) appends the backward pass, then the gradient
clips (fluid.clip), the weight decay (fluid.regularizer) and one optimize op
per parameter, and returns (optimize_ops, params_grads) as Fluid does. The
learning rate is a number or a one-element Variable (an LR schedule of
fluid.layers). A sparse gradient (embedding(is_sparse=True)) is taken by
SGD, Momentum, Adam and Adagrad; minimize() with another optimizer raises
ValueError naming the parameter."""
from . import regularizer as _regularizer
from .framework import Variable, current_builder


def _names(items, arg):
    out = []
    for item in items:
        if isinstance(item, Variable):
            out.append(item.name)
        elif isinstance(item, str):
            out.append(item)
        else:
            raise TypeError(f"minimize: {arg} must hold names or Variables, "
                            f"got {type(item).__name__}")
    return out


def _learning_rate(value, cls):
    if isinstance(value, Variable):
        return value.name
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{cls}: learning_rate must be a number or a "
                        f"Variable, got {type(value).__name__}")
    return float(value)


class Optimizer:
    """Base of the optimizers: holds the update rule's settings and
    appends the training part of a program in minimize(). Use a subclass
    (SGD, Momentum, Adam, ...); each takes learning_rate (a number, or a
    one-element Variable such as an LR schedule of fluid.layers),
    regularization (a fluid.regularizer.L1Decay / L2Decay for every
    parameter) and name (accepted for Fluid's signature).
    """

    def __init__(self, regularization=None, **config):
        name = type(self).__name__
        config["learning_rate"] = _learning_rate(config["learning_rate"],
                                                 name)
        reg = _regularizer._as_dict(regularization, name)
        if reg is not None:
            config["regularization"] = reg
        self.regularization = regularization
        self._config = config

    def minimize(self, loss, startup_program=None, parameter_list=None,
                 no_grad_set=None):
        """Appends to loss's program the backward pass from `loss`, then
        the gradient clips (fluid.clip), the weight decay
        (fluid.regularizer) and one optimize op per trainable parameter;
        the optimizer's state (moments, accumulators) gets its
        initialisers in the startup program. Returns (optimize_ops,
        params_grads): the optimize ops, and (parameter, gradient)
        Variable pairs.

        loss: a one-element Variable (e.g. a mean); parameter_list: names
        or Variables of the parameters to update (None: all trainable
        ones); no_grad_set: names or Variables through which no gradient
        flows. startup_program is accepted for Fluid's signature (the
        startup program of the enclosing program_guard is used).

            >>> loss = fluid.layers.mean(
            ...     fluid.layers.square_error_cost(pred, y))
            >>> opt = fluid.optimizer.SGD(learning_rate=0.01)
            >>> optimize_ops, params_grads = opt.minimize(loss)
        """
        b, program = current_builder()
        before = len(program.ops())
        config = dict(self._config)
        if parameter_list is not None:
            config["parameter_list"] = _names(parameter_list,
                                              "parameter_list")
        no_grad = _names(no_grad_set or [], "no_grad_set")
        pairs = b.minimize(config, loss.name if hasattr(loss, "name")
                           else str(loss), no_grad)
        optimize_ops = [op for op in program.ops()[before:] if "optimize" in op["roles"]]
        params_grads = [(program.var(p), program.var(g)) for p, g in pairs]
        return optimize_ops, params_grads


class SGD(Optimizer):
    """Plain gradient descent: param -= learning_rate * grad (op `sgd`;
    with a sparse gradient, only the rows it holds).

        >>> fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    """

    def __init__(self, learning_rate, regularization=None, name=None):
        super().__init__(regularization, type="sgd",
                         learning_rate=learning_rate)


class Momentum(Optimizer):
    """Gradient descent with momentum (op `momentum`): v = momentum * v +
    g; param -= learning_rate * v, or with use_nesterov param -=
    learning_rate * (g + momentum * v). weight_decay adds weight_decay *
    param to g inside the update (an L2 decay).

        >>> fluid.optimizer.Momentum(learning_rate=0.05,
        ...                          momentum=0.9).minimize(loss)
    """

    def __init__(self, learning_rate, momentum=0.9, use_nesterov=False,
                 weight_decay=0.0, regularization=None, name=None):
        super().__init__(regularization, type="momentum",
                         learning_rate=learning_rate,
                         momentum=float(momentum), nesterov=bool(use_nesterov),
                         weight_decay=float(weight_decay))


class Adam(Optimizer):
    """Adam (op `adam`): m = beta1 * m + (1 - beta1) * g; v = beta2 * v +
    (1 - beta2) * g^2; param -= learning_rate / (1 - beta1^t) * m /
    (sqrt(v / (1 - beta2^t)) + epsilon), t the step. weight_decay: an L2
    decay added to g, or with decoupled_weight_decay param *= 1 -
    learning_rate * weight_decay before the update (AdamW). lazy_mode: a
    sparse gradient (embedding(is_sparse=True)) updates only the rows it
    holds.

        >>> fluid.optimizer.Adam(learning_rate=1e-3).minimize(loss)
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, weight_decay=0.0, decoupled_weight_decay=False,
                 regularization=None, name=None, lazy_mode=False):
        # lazy_mode: with a sparse gradient (embedding(is_sparse=True)) only
        # the rows it touches are updated, as in Fluid.
        super().__init__(regularization, type="adam",
                         learning_rate=learning_rate,
                         beta1=float(beta1), beta2=float(beta2),
                         epsilon=float(epsilon),
                         weight_decay=float(weight_decay),
                         decoupled_weight_decay=bool(decoupled_weight_decay),
                         lazy_mode=bool(lazy_mode))


SGDOptimizer, MomentumOptimizer, AdamOptimizer = SGD, Momentum, Adam


class Adagrad(Optimizer):
    """Moment += g^2; param -= lr * g / (sqrt(Moment) + epsilon)."""

    def __init__(self, learning_rate, epsilon=1.0e-6, regularization=None,
                 name=None, initial_accumulator_value=0.0):
        super().__init__(regularization, type="adagrad",
                         learning_rate=learning_rate, epsilon=float(epsilon),
                         initial_accumulator_value=float(
                             initial_accumulator_value))


class DecayedAdagrad(Optimizer):
    """Moment = decay * Moment + (1 - decay) * g^2; then as Adagrad."""

    def __init__(self, learning_rate, decay=0.95, epsilon=1.0e-6,
                 regularization=None, name=None):
        super().__init__(regularization, type="decayed_adagrad",
                         learning_rate=learning_rate, decay=float(decay),
                         epsilon=float(epsilon))


class RMSProp(Optimizer):
    """Fluid's RMSProp: epsilon under the root, lr inside the momentum
    buffer (see ops/rmsprop_op.cc)."""

    def __init__(self, learning_rate, rho=0.95, epsilon=1.0e-6, momentum=0.0,
                 centered=False, regularization=None, name=None):
        super().__init__(regularization, type="rmsprop",
                         learning_rate=learning_rate, rho=float(rho),
                         epsilon=float(epsilon), momentum=float(momentum),
                         centered=bool(centered))


class Adamax(Optimizer):
    """Adam with the infinity norm; epsilon is added to the decayed norm
    (see ops/adamax_op.cc)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, regularization=None, name=None):
        super().__init__(regularization, type="adamax",
                         learning_rate=learning_rate, beta1=float(beta1),
                         beta2=float(beta2), epsilon=float(epsilon))


class Adadelta(Optimizer):
    """Fluid's Adadelta: the update does not use learning_rate (see
    ops/adadelta_op.cc)."""

    def __init__(self, learning_rate, epsilon=1.0e-6, rho=0.95,
                 regularization=None, name=None):
        super().__init__(regularization, type="adadelta",
                         learning_rate=learning_rate, epsilon=float(epsilon),
                         rho=float(rho))


class LarsMomentum(Optimizer):
    """Momentum with the layer-wise learning rate
    lr * lars_coeff * |param| / (|grad| + lars_weight_decay * |param|)."""

    def __init__(self, learning_rate, momentum, lars_coeff=0.001,
                 lars_weight_decay=0.0005, regularization=None, name=None):
        super().__init__(regularization, type="lars_momentum",
                         learning_rate=learning_rate,
                         momentum=float(momentum),
                         lars_coeff=float(lars_coeff),
                         lars_weight_decay=float(lars_weight_decay))


AdagradOptimizer, DecayedAdagradOptimizer = Adagrad, DecayedAdagrad
RMSPropOptimizer, AdamaxOptimizer = RMSProp, Adamax
AdadeltaOptimizer, LarsMomentumOptimizer = Adadelta, LarsMomentum
