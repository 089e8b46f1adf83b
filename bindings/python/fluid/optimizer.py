"""Optimizers: minimize(loss) appends the backward pass and one optimize op
per parameter, and returns (optimize_ops, params_grads) as the seed API
did."""
from .framework import current_builder


class Optimizer:
    def __init__(self, **config):
        self._config = config

    def minimize(self, loss, startup_program=None):
        b, program = current_builder()
        before = len(program.ops())
        pairs = b.minimize(self._config, loss.name if hasattr(loss, "name")
                           else str(loss))
        optimize_ops = [op for op in program.ops()[before:] if "optimize" in op["roles"]]
        params_grads = [(program.var(p), program.var(g)) for p, g in pairs]
        return optimize_ops, params_grads


class SGD(Optimizer):
    def __init__(self, learning_rate):
        super().__init__(type="sgd", learning_rate=float(learning_rate))


class Momentum(Optimizer):
    def __init__(self, learning_rate, momentum=0.9, use_nesterov=False,
                 weight_decay=0.0):
        super().__init__(type="momentum", learning_rate=float(learning_rate),
                         momentum=float(momentum), nesterov=bool(use_nesterov),
                         weight_decay=float(weight_decay))


class Adam(Optimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, weight_decay=0.0, decoupled_weight_decay=False):
        super().__init__(type="adam", learning_rate=float(learning_rate),
                         beta1=float(beta1), beta2=float(beta2),
                         epsilon=float(epsilon),
                         weight_decay=float(weight_decay),
                         decoupled_weight_decay=bool(decoupled_weight_decay))


SGDOptimizer, MomentumOptimizer, AdamOptimizer = SGD, Momentum, Adam
