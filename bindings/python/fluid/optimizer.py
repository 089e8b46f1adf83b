"""Optimizers: minimize(loss) appends the backward pass, then the gradient
clips (fluid.clip), the weight decay (fluid.regularizer) and one optimize op
per parameter, and returns (optimize_ops, params_grads) as Fluid does:
optimize_ops the Operator objects of the appended optimize ops (each also
reads as a dict: op["type"], op["roles"]), params_grads (parameter,
gradient) Variable pairs. The learning rate is a number or a one-element
Variable (an LR schedule of fluid.layers). A sparse gradient
(embedding(is_sparse=True)) is taken by SGD, Momentum, Adam and Adagrad;
minimize() with another optimizer raises ValueError naming the parameter.

Every constructor takes Fluid 1.8's arguments, in its order:
parameter_list (the parameters to update; None: every trainable one),
regularization (a fluid.regularizer for every parameter without its own),
grad_clip (a fluid.clip.GradientClipBy* for the updated parameters, in
place of their ParamAttr and set_gradient_clip clips) and name (accepted;
it names nothing). Arguments that are not Fluid's come last."""
from . import clip as _clip
from . import regularizer as _regularizer
from .framework import Variable, current_builder


def _names(items, arg):
    if isinstance(items, (str, Variable)):
        items = [items]
    out = []
    for item in items:
        if isinstance(item, Variable):
            out.append(item.name)
        elif isinstance(item, str):
            out.append(item)
        else:
            raise TypeError(f"{arg} must hold names or Variables, got "
                            f"{type(item).__name__}")
    return out


def _learning_rate(value, cls):
    if isinstance(value, Variable):
        return value.name
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{cls}: learning_rate must be a number or a "
                        f"Variable, got {type(value).__name__}")
    return float(value)


def _refused(method):
    return NotImplementedError(
        f"Optimizer.{method}: appending the backward pass apart from the "
        "parameter updates is not supported here; call minimize(loss, "
        "parameter_list=..., no_grad_set=...), which appends both, and "
        "give gradient clips (grad_clip=, fluid.clip) and weight decay "
        "(regularization=, fluid.regularizer, ParamAttr) to the optimizer "
        "or the parameters")


class _MinimizeOnly:
    """Fluid's halves of minimize, which every optimizer here refuses: the
    program rewrites run in minimize() as one."""

    def backward(self, loss, startup_program=None, parameter_list=None,
                 no_grad_set=None, callbacks=None):
        """Fluid's first half of minimize. Not supported here: raises
        NotImplementedError saying to call minimize()."""
        raise _refused("backward")

    def apply_gradients(self, params_grads):
        """Fluid's second half of minimize. Not supported here: raises
        NotImplementedError saying to call minimize()."""
        raise _refused("apply_gradients")

    def apply_optimize(self, loss, startup_program, params_grads):
        """Fluid's second half of minimize. Not supported here: raises
        NotImplementedError saying to call minimize()."""
        raise _refused("apply_optimize")


class Optimizer(_MinimizeOnly):
    """Base of the optimizers: holds the update rule's settings and
    appends the training part of a program in minimize(). Use a subclass
    (SGD, Momentum, Adam, ...); each takes learning_rate (a number, or a
    one-element Variable such as an LR schedule of fluid.layers),
    parameter_list, regularization, grad_clip and name as Fluid 1.8 does
    (see the module's docstring).
    """

    def __init__(self, learning_rate, parameter_list=None,
                 regularization=None, grad_clip=None, name=None):
        cls = type(self).__name__
        self._learning_rate = _learning_rate(learning_rate, cls)
        self._regularization = _regularizer._as_dict(regularization, cls)
        self.regularization = regularization
        self._parameter_list = None if parameter_list is None else _names(
            parameter_list, f"{cls}(parameter_list=...)")
        self._grad_clip = _clip._check_clip(grad_clip, f"{cls}(grad_clip=...)")
        self._name = name
        self._rule = {}

    def _config(self, parameter_list):
        """The optimizer as the C++ builder reads it."""
        config = dict(self._rule, learning_rate=self._learning_rate)
        if self._regularization is not None:
            config["regularization"] = self._regularization
        if parameter_list is not None:
            config["parameter_list"] = parameter_list
        return config

    def minimize(self, loss, startup_program=None, parameter_list=None,
                 no_grad_set=None, grad_clip=None):
        """Appends to loss's program the backward pass from `loss`, then
        the gradient clips (fluid.clip), the weight decay
        (fluid.regularizer) and one optimize op per trainable parameter;
        the optimizer's state (moments, accumulators) gets its
        initialisers in the startup program. Returns (optimize_ops,
        params_grads): the appended optimize ops as Operator objects
        (fluid.framework.Operator: op.type, op.input("Param"), ...; op["type"]
        reads as before), and (parameter, gradient) Variable pairs.

        loss: a one-element Variable (e.g. a mean); parameter_list: names
        or Variables of the parameters to update (None: the optimizer's
        parameter_list, else all trainable ones); no_grad_set: names or
        Variables through which no gradient flows. startup_program is
        accepted for Fluid's signature (the startup program of the
        enclosing program_guard is used). grad_clip (Fluid 1.7's argument
        of minimize): as the constructor's grad_clip, which it replaces.

            >>> loss = fluid.layers.mean(
            ...     fluid.layers.square_error_cost(pred, y))
            >>> opt = fluid.optimizer.SGD(learning_rate=0.01)
            >>> optimize_ops, params_grads = opt.minimize(loss)
        """
        b, program = current_builder()
        before = len(program.ops())
        if parameter_list is not None:
            parameter_list = _names(parameter_list,
                                    "minimize(parameter_list=...)")
        else:
            parameter_list = self._parameter_list
        clip = self._grad_clip if grad_clip is None else _clip._check_clip(
            grad_clip, "minimize(grad_clip=...)")
        if clip is not None:
            _clip._clip_parameters(b, program, clip, parameter_list)
        no_grad = _names(no_grad_set or [], "minimize(no_grad_set=...)")
        pairs = b.minimize(self._config(parameter_list),
                           loss.name if hasattr(loss, "name") else str(loss),
                           no_grad)
        optimize_ops = [op for op in program.global_block().ops[before:]
                        if "optimize" in op["roles"]]
        params_grads = [(program.var(p), program.var(g)) for p, g in pairs]
        return optimize_ops, params_grads


class SGD(Optimizer):
    """Plain gradient descent: param -= learning_rate * grad (op `sgd`;
    with a sparse gradient, only the rows it holds).

        >>> fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    """

    def __init__(self, learning_rate, parameter_list=None,
                 regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization,
                         grad_clip, name)
        self._rule = {"type": "sgd"}


class Momentum(Optimizer):
    """Gradient descent with momentum (op `momentum`): v = momentum * v +
    g; param -= learning_rate * v, or with use_nesterov param -=
    learning_rate * (g + momentum * v). momentum defaults to 0.9 (Fluid
    requires it). weight_decay (not Fluid's) adds weight_decay * param to
    g inside the update (an L2 decay).

        >>> fluid.optimizer.Momentum(learning_rate=0.05,
        ...                          momentum=0.9).minimize(loss)
    """

    def __init__(self, learning_rate, momentum=0.9, parameter_list=None,
                 use_nesterov=False, regularization=None, grad_clip=None,
                 name=None, weight_decay=0.0):
        super().__init__(learning_rate, parameter_list, regularization,
                         grad_clip, name)
        self._rule = {"type": "momentum", "momentum": float(momentum),
                      "nesterov": bool(use_nesterov),
                      "weight_decay": float(weight_decay)}


class Adam(Optimizer):
    """Adam (op `adam`): m = beta1 * m + (1 - beta1) * g; v = beta2 * v +
    (1 - beta2) * g^2; param -= learning_rate / (1 - beta1^t) * m /
    (sqrt(v / (1 - beta2^t)) + epsilon), t the step. lazy_mode: a sparse
    gradient (embedding(is_sparse=True)) updates only the rows it holds.
    weight_decay (not Fluid's): an L2 decay added to g, or with
    decoupled_weight_decay param *= 1 - learning_rate * weight_decay
    before the update (AdamW).

        >>> fluid.optimizer.Adam(learning_rate=1e-3).minimize(loss)
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, parameter_list=None, regularization=None,
                 grad_clip=None, name=None, lazy_mode=False, weight_decay=0.0,
                 decoupled_weight_decay=False):
        super().__init__(learning_rate, parameter_list, regularization,
                         grad_clip, name)
        self._rule = {"type": "adam", "beta1": float(beta1),
                      "beta2": float(beta2), "epsilon": float(epsilon),
                      "weight_decay": float(weight_decay),
                      "decoupled_weight_decay": bool(decoupled_weight_decay),
                      "lazy_mode": bool(lazy_mode)}


SGDOptimizer, MomentumOptimizer, AdamOptimizer = SGD, Momentum, Adam


class Adagrad(Optimizer):
    """Moment += g^2; param -= lr * g / (sqrt(Moment) + epsilon) (op
    `adagrad`); the moments start at initial_accumulator_value.

        >>> fluid.optimizer.Adagrad(learning_rate=0.1).minimize(loss)
    """

    def __init__(self, learning_rate, epsilon=1.0e-6, parameter_list=None,
                 regularization=None, grad_clip=None, name=None,
                 initial_accumulator_value=0.0):
        super().__init__(learning_rate, parameter_list, regularization,
                         grad_clip, name)
        self._rule = {"type": "adagrad", "epsilon": float(epsilon),
                      "initial_accumulator_value": float(
                          initial_accumulator_value)}


class DecayedAdagrad(Optimizer):
    """Moment = decay * Moment + (1 - decay) * g^2; then as Adagrad (op
    `decayed_adagrad`).

        >>> fluid.optimizer.DecayedAdagrad(learning_rate=0.1).minimize(loss)
    """

    def __init__(self, learning_rate, decay=0.95, epsilon=1.0e-6,
                 parameter_list=None, regularization=None, grad_clip=None,
                 name=None):
        super().__init__(learning_rate, parameter_list, regularization,
                         grad_clip, name)
        self._rule = {"type": "decayed_adagrad", "decay": float(decay),
                      "epsilon": float(epsilon)}


class RMSProp(Optimizer):
    """Fluid's RMSProp: epsilon under the root, lr inside the momentum
    buffer (see ops/rmsprop_op.cc).

        >>> fluid.optimizer.RMSProp(learning_rate=0.01).minimize(loss)
    """

    def __init__(self, learning_rate, rho=0.95, epsilon=1.0e-6, momentum=0.0,
                 centered=False, parameter_list=None, regularization=None,
                 grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization,
                         grad_clip, name)
        self._rule = {"type": "rmsprop", "rho": float(rho),
                      "epsilon": float(epsilon), "momentum": float(momentum),
                      "centered": bool(centered)}


class Adamax(Optimizer):
    """Adam with the infinity norm; epsilon is added to the decayed norm
    (see ops/adamax_op.cc).

        >>> fluid.optimizer.Adamax(learning_rate=0.002).minimize(loss)
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, parameter_list=None, regularization=None,
                 grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization,
                         grad_clip, name)
        self._rule = {"type": "adamax", "beta1": float(beta1),
                      "beta2": float(beta2), "epsilon": float(epsilon)}


class Adadelta(Optimizer):
    """Fluid's Adadelta: the update does not use learning_rate (see
    ops/adadelta_op.cc).

        >>> fluid.optimizer.Adadelta(learning_rate=0.001).minimize(loss)
    """

    def __init__(self, learning_rate, epsilon=1.0e-6, rho=0.95,
                 parameter_list=None, regularization=None, grad_clip=None,
                 name=None):
        super().__init__(learning_rate, parameter_list, regularization,
                         grad_clip, name)
        self._rule = {"type": "adadelta", "epsilon": float(epsilon),
                      "rho": float(rho)}


class LarsMomentum(Optimizer):
    """Momentum with the layer-wise learning rate
    lr * lars_coeff * |param| / (|grad| + lars_weight_decay * |param|).

        >>> fluid.optimizer.LarsMomentum(learning_rate=0.1,
        ...                              momentum=0.9).minimize(loss)
    """

    def __init__(self, learning_rate, momentum, lars_coeff=0.001,
                 lars_weight_decay=0.0005, parameter_list=None,
                 regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization,
                         grad_clip, name)
        self._rule = {"type": "lars_momentum", "momentum": float(momentum),
                      "lars_coeff": float(lars_coeff),
                      "lars_weight_decay": float(lars_weight_decay)}


AdagradOptimizer, DecayedAdagradOptimizer = Adagrad, DecayedAdagrad
RMSPropOptimizer, AdamaxOptimizer = RMSProp, Adamax
AdadeltaOptimizer, LarsMomentumOptimizer = Adadelta, LarsMomentum


class GradientMergeOptimizer(_MinimizeOnly):
    """Gradient merge (gradient accumulation), Fluid 1.8's: the forward and
    backward passes run on every batch (a micro-step), the inner
    optimizer's update once every `k_steps` micro-steps, on their
    gradients accumulated in float32 (averaged over the k_steps when
    `avg`, else summed). k_steps batches of B then train like one batch of
    k_steps x B with the activation memory of B; learning-rate schedules
    advance once per merged step. With fluid.MPIExecutor (or fleet) the
    gradients' allreduce also runs once per merged step.

    inner_optimizer: the optimizer whose update runs (SGD, Momentum, Adam,
    ..., or one decorated by fluid.contrib.mixed_precision.decorate);
    k_steps: micro-steps per merged step, an integer >= 1 (1: plain
    training); avg: the merged gradient is the micro-steps' mean (False:
    their sum). The same as DistributedStrategy.gradient_merge with
    gradient_merge_configs={"k_steps": k, "avg": avg}.

        >>> opt = fluid.optimizer.GradientMergeOptimizer(
        ...     fluid.optimizer.Adam(learning_rate=0.001), k_steps=4)
        >>> opt.minimize(loss)
    """

    def __init__(self, inner_optimizer, k_steps=1, avg=True):
        if inner_optimizer is None or not hasattr(inner_optimizer,
                                                  "minimize"):
            raise TypeError("GradientMergeOptimizer: inner_optimizer must be "
                            "an optimizer (fluid.optimizer.SGD, Adam, ...), "
                            f"got {type(inner_optimizer).__name__}")
        if isinstance(k_steps, bool) or not isinstance(k_steps, int) or \
                k_steps < 1:
            raise ValueError("GradientMergeOptimizer: k_steps must be an "
                             f"integer >= 1, got {k_steps!r}")
        if not isinstance(avg, bool):
            raise TypeError("GradientMergeOptimizer: avg must be True or "
                            f"False, got {avg!r}")
        self.inner_optimizer = inner_optimizer
        self.k_steps = k_steps
        self.avg = avg
        self.type = "gradient_merge"

    def minimize(self, loss, startup_program=None, parameter_list=None,
                 no_grad_set=None):
        """The inner optimizer's minimize (its arguments), then the rewrite
        of loss's program for gradient merge (transpiler/gradient_merge.h):
        each gradient is added to a persistable accumulator
        (<grad>@GRAD_MERGE) every run, and the updates, clips and weight
        decay run on every k_steps-th run only. Returns what the inner
        minimize returns (optimize_ops, params_grads). A sparse gradient
        (embedding(is_sparse=True)) is refused: build the embedding with
        is_sparse=False."""
        out = self.inner_optimizer.minimize(loss, startup_program,
                                            parameter_list, no_grad_set)
        if self.k_steps > 1:
            from .distributed_strategy import DistributedStrategy
            b, _ = current_builder()
            s = DistributedStrategy()
            s.gradient_merge = True
            s.gradient_merge_configs = {"k_steps": self.k_steps,
                                        "avg": self.avg}
            b.merge_gradients(s.serialize())
        return out


class RecomputeOptimizer(_MinimizeOnly):
    """Recompute (activation checkpointing), Fluid 1.6's: the backward pass
    recomputes the activations between checkpoints from them instead of
    keeping them from the forward pass, trading one more forward pass for
    the memory of the activations (see docs/memory.md, "Recompute").

    optimizer: the optimizer whose minimize builds the training program
    (fluid.optimizer.SGD, Adam, ...; with mixed precision either order
    works: RecomputeOptimizer(fluid.contrib.mixed_precision.decorate(opt))
    or decorate(RecomputeOptimizer(opt))). Call _set_checkpoints before
    minimize.

        >>> opt = fluid.optimizer.RecomputeOptimizer(
        ...     fluid.optimizer.Adam(learning_rate=0.001))
        >>> opt._set_checkpoints([block1_out, block2_out])
        >>> opt.minimize(loss)

    The same with a fleet or MPIExecutor strategy:
    strategy.recompute = True; strategy.recompute_configs =
    {"checkpoints": ["fc_1.tmp_2", ...]} (an empty list: chosen as "auto"
    chooses them).
    """

    def __init__(self, optimizer):
        if optimizer is None or not hasattr(optimizer, "minimize"):
            raise TypeError("RecomputeOptimizer: optimizer must be an "
                            "optimizer (fluid.optimizer.SGD, Adam, ...), "
                            f"got {type(optimizer).__name__}")
        self._optimizer = optimizer
        self._checkpoints = None
        self.type = "recompute"

    def _set_checkpoints(self, checkpoints):
        """checkpoints: a list of Variables (or their names) the forward
        pass computes, the boundaries of the recomputed segments; or "auto":
        the outputs of the residual adds and lstm/gru layers."""
        if checkpoints == "auto":
            self._checkpoints = []
            return
        if not isinstance(checkpoints, (list, tuple)):
            raise TypeError("RecomputeOptimizer._set_checkpoints: "
                            "checkpoints must be a list of Variables or "
                            f"names, or \"auto\", got {checkpoints!r}")
        names = []
        for c in checkpoints:
            name = c if isinstance(c, str) else getattr(c, "name", None)
            if not isinstance(name, str) or not name:
                raise TypeError("RecomputeOptimizer._set_checkpoints: "
                                "each checkpoint must be a Variable or a "
                                f"name, got {c!r}")
            names.append(name)
        if not names:
            raise ValueError("RecomputeOptimizer._set_checkpoints: the list "
                             "is empty; give variables, or \"auto\"")
        self._checkpoints = names

    def minimize(self, loss, startup_program=None, parameter_list=None,
                 no_grad_set=None):
        """The optimizer's minimize (its arguments), then the rewrite of
        loss's program (transpiler/recompute.h): the backward ops read
        `<var>@RECOMPUTE` copies of each segment's activations, written by a
        replay of the segment's forward ops just before its backward ops.
        Returns what the optimizer's minimize returns (optimize_ops,
        params_grads). A checkpoint name that is no variable of the
        program, or one the forward pass does not compute, is a
        ValueError naming it."""
        if self._checkpoints is None:
            raise RuntimeError("RecomputeOptimizer.minimize: call "
                               "_set_checkpoints(checkpoints) first (a list "
                               "of Variables, or \"auto\")")
        out = self._optimizer.minimize(loss, startup_program, parameter_list,
                                       no_grad_set)
        from .distributed_strategy import DistributedStrategy
        s = DistributedStrategy()
        s.recompute = True
        s.recompute_configs = {"checkpoints": list(self._checkpoints)}
        b, program = current_builder()
        self._used = list(b.recompute(s.serialize()))
        # For a mixed-precision decorator around this optimizer, whose
        # rewrite regenerates the backward pass.
        program._recompute_strategy = s.serialize()
        return out

    def load(self, stat_dict):
        """Fluid's state loading of the inner optimizer. Not supported
        here: the optimizer's state lives in the program's persistable
        variables; load it with fluid.io.load_persistables."""
        raise NotImplementedError(
            "RecomputeOptimizer.load: load the optimizer state with "
            "fluid.io.load_persistables(exe, dirname, main_program)")

    def backward(self, loss, startup_program=None, parameter_list=None,
                 no_grad_set=None, callbacks=None, checkpoints=None):
        """Fluid's first half of minimize. Not supported here: raises
        NotImplementedError saying to call minimize()."""
        raise _refused("backward")


class PipelineOptimizer(_MinimizeOnly):
    """Pipeline parallelism, Fluid 1.8's: the program, built in stages
    (`with fluid.pipeline_stage(k):` or `with fluid.device_guard("gpu:k"):`
    around its layers), runs under fluid.MPIExecutor as a pipeline of as
    many stages as it uses, each batch cut into `num_microbatches`
    micro-batches (along the first axis; the batch size must be a multiple
    of it) that flow through the stages in turn, with the gradients
    summed over them and one update per batch, as the whole batch gives.

    optimizer: the optimizer whose minimize builds the training program
    (SGD, Momentum, Adam, ...); num_microbatches: an int >= 1;
    start_cpu_core_id: accepted for Fluid's signature (Fluid pinned each
    section's threads from that core); it places nothing here.

    Under mpirun the ranks are laid out [stage][data parallel][tensor
    parallel]: with N ranks, each stage runs on N / stages of them, and
    the ranks at one position of every stage read the same batches (as
    fluid.reader and DataLoader shard them). The MPIExecutor's
    DistributedStrategy may leave its pipeline unset (the program's is
    used) or ask for the same one; a different one is a ValueError naming
    both. On a plain fluid.Executor (one process) the program runs
    unpipelined: the same updates, the whole batch at once.

        >>> with fluid.pipeline_stage(0):
        ...     hidden = fluid.layers.fc(x, 64, act="relu")
        >>> with fluid.pipeline_stage(1):
        ...     loss = fluid.layers.mean(fluid.layers.square_error_cost(
        ...         fluid.layers.fc(hidden, 1), y))
        >>> opt = fluid.optimizer.PipelineOptimizer(
        ...     fluid.optimizer.Momentum(0.1, 0.9), num_microbatches=4)
        >>> opt.minimize(loss)
    """

    def __init__(self, optimizer, num_microbatches=1, start_cpu_core_id=0):
        if optimizer is None or not hasattr(optimizer, "minimize"):
            raise TypeError("PipelineOptimizer: optimizer must be an "
                            "optimizer (fluid.optimizer.SGD, Adam, ...), "
                            f"got {type(optimizer).__name__}")
        for name, value, least in (("num_microbatches", num_microbatches, 1),
                                   ("start_cpu_core_id", start_cpu_core_id,
                                    0)):
            if isinstance(value, bool) or not isinstance(value, int) or \
                    value < least:
                raise ValueError(f"PipelineOptimizer: {name} must be an "
                                 f"int >= {least}, got {value!r}")
        self._optimizer = optimizer
        self._num_microbatches = num_microbatches
        self._start_cpu_core_id = start_cpu_core_id
        self.type = "pipeline"

    def minimize(self, loss, startup_program=None, parameter_list=None,
                 no_grad_set=None):
        """The optimizer's minimize (its arguments), then records on loss's
        program that it is a pipeline of (highest stage + 1) stages with
        num_microbatches micro-batches, for fluid.MPIExecutor. Returns what
        the optimizer's minimize returns (optimize_ops, params_grads). A
        program with no op placed on a stage, or with a stage below its
        highest that no op uses, is a ValueError saying so."""
        out = self._optimizer.minimize(loss, startup_program, parameter_list,
                                       no_grad_set)
        _, program = current_builder()
        used = {op.attr("pipeline_stage")
                for op in program.global_block().ops
                if op.has_attr("pipeline_stage")}
        if not used:
            raise ValueError(
                "PipelineOptimizer.minimize: no op of the program is placed "
                "on a stage; build its layers inside `with "
                "fluid.pipeline_stage(k):` (or fluid.device_guard('gpu:k')) "
                "blocks, k = 0, 1, ... in the order the stages run")
        stages = max(used) + 1
        empty = sorted(set(range(stages)) - used)
        if empty:
            raise ValueError(
                f"PipelineOptimizer.minimize: the program uses stages up to "
                f"{stages - 1} but no op is on stage(s) "
                f"{', '.join(map(str, empty))}; number the stages 0 to "
                f"{len(used) - 1} without gaps")
        program._pipeline = (stages, self._num_microbatches)
        from . import reader
        reader._set_pipeline(stages)
        return out


def _merged_strategy(strategy, program):
    """`strategy`, with gradient_merge set as GradientMergeOptimizer
    rewrote `program` (so that its collectives skip with its updates), and
    the pipeline PipelineOptimizer recorded on it: for MPIExecutor."""
    pipeline = getattr(program, "_pipeline", None)
    if pipeline is not None:
        strategy = strategy._with_pipeline(*pipeline, "PipelineOptimizer")
    return _gradient_merged(strategy, program)


def _gradient_merged(strategy, program):
    from .distributed_strategy import DistributedStrategy
    for op in program.global_block().ops:
        if op.type != "gradient_merge_step":
            continue
        if strategy.gradient_merge:
            return strategy
        merged = DistributedStrategy.from_text(str(strategy))
        merged.gradient_merge = True
        merged.gradient_merge_configs = {"k_steps": op.attr("k_steps"),
                                         "avg": op.attr("avg")}
        return merged
    return strategy
