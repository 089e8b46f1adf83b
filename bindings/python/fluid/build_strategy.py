"""BuildStrategy and ExecutionStrategy (Fluid 1.x's classes, exported by
fluid.compiler and fluid): their fields with Fluid's defaults, checked when
set, and the mapping of those with a meaning here onto a
fluid.DistributedStrategy (docs/python.md, "BuildStrategy and
ExecutionStrategy", has the table)."""
from . import _core
from .distributed_strategy import DistributedStrategy
from .executor import _LAUNCHED_RANKS


class _Choice:
    """A member of one of BuildStrategy's enumerations (ReduceStrategy,
    GradientScaleStrategy): compared by identity, printed by name."""

    def __init__(self, enum, name, value):
        self._enum, self.name, self.value = enum, name, value

    def __int__(self):
        return self.value

    def __repr__(self):
        return f"{self._enum}.{self.name}"


class _ReduceStrategy:
    """How gradients reach the optimizer: AllReduce (every rank updates
    every parameter) or Reduce (each rank updates a share: sharding)."""
    AllReduce = _Choice("ReduceStrategy", "AllReduce", 0)
    Reduce = _Choice("ReduceStrategy", "Reduce", 1)


class _GradientScaleStrategy:
    """How the loss gradient is scaled: CoeffNumDevice (averaged over the
    ranks), One (summed), Customized (refused here)."""
    CoeffNumDevice = _Choice("GradientScaleStrategy", "CoeffNumDevice", 0)
    One = _Choice("GradientScaleStrategy", "One", 1)
    Customized = _Choice("GradientScaleStrategy", "Customized", 2)


def _members(enum):
    return [v for v in vars(enum).values() if isinstance(v, _Choice)]


def _check_field(owner, name, kind, value):
    """Raises TypeError/ValueError naming `owner.name` when `value` is not
    of `kind`: bool, int (>= 0), str, list (of str), or an enumeration."""
    where = f"{owner}.{name}"
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and value < 0:
            raise ValueError(f"{where} must be >= 0, got {value}")
    elif kind is str:
        ok = isinstance(value, str)
    elif kind is list:
        ok = isinstance(value, (list, tuple, set)) and all(
            isinstance(v, str) for v in value)
    else:
        if value not in _members(kind):
            raise ValueError(
                f"{where} must be one of "
                f"{', '.join(map(repr, _members(kind)))}, got {value!r}")
        return
    if not ok:
        raise TypeError(f"{where} takes a {kind.__name__}, got "
                        f"{type(value).__name__} {value!r}")


class _Fields:
    """Attributes declared in the class's _FIELDS table ({name: (default,
    kind)}), checked when set; setting another name is an AttributeError
    listing them. Remembers which were set, so that only those change the
    distributed strategy."""

    _FIELDS = {}

    def __init__(self):
        object.__setattr__(self, "_set", {})

    def __getattr__(self, name):
        if name.startswith("_") or name not in self._FIELDS:
            raise AttributeError(self._unknown(name))
        return self._set.get(name, self._FIELDS[name][0])

    def __setattr__(self, name, value):
        if name not in self._FIELDS:
            raise AttributeError(self._unknown(name))
        _check_field(type(self).__name__, name, self._FIELDS[name][1], value)
        self._check(name, value)
        self._set[name] = list(value) if isinstance(value, (tuple, set)) \
            else value

    def _check(self, name, value):
        """Refuses a well-typed value that has no meaning here."""

    def _unknown(self, name):
        return (f"{type(self).__name__} has no attribute '{name}'; its "
                f"attributes: {', '.join(sorted(self._FIELDS))}")

    def __repr__(self):
        return f"{type(self).__name__}({self._set})"


class BuildStrategy(_Fields):
    """How a data-parallel program is built (Fluid 1.x's class). The fields
    with a meaning here map onto a fluid.DistributedStrategy when they are
    set (see docs/python.md): reduce_strategy Reduce turns sharding on
    (ZeRO stage 2); gradient_scale_strategy CoeffNumDevice averages the
    gradients over the ranks and One sums them; fuse_all_reduce_ops packs
    gradients into buckets (False: one allreduce per gradient);
    sync_batch_norm computes batch norm statistics over all ranks;
    use_hierarchical_allreduce reduces within each host first. num_trainers
    and trainer_id, when set, must match the MPI launcher's world and rank.
    The graph-building options of Fluid's ParallelExecutor (fusions,
    inplace, memory_optimize, ...) are accepted and change nothing: the
    program runs as it is built."""

    ReduceStrategy = _ReduceStrategy
    GradientScaleStrategy = _GradientScaleStrategy

    _FIELDS = {
        "reduce_strategy": (_ReduceStrategy.AllReduce, _ReduceStrategy),
        "gradient_scale_strategy": (_GradientScaleStrategy.CoeffNumDevice,
                                    _GradientScaleStrategy),
        "fuse_all_reduce_ops": (True, bool),
        "sync_batch_norm": (False, bool),
        "use_hierarchical_allreduce": (False, bool),
        "hierarchical_allreduce_inter_nranks": (0, int),
        "num_trainers": (1, int),
        "trainer_id": (0, int),
        "trainers_endpoints": ([], list),
        "nccl_comm_num": (1, int),
        "async_mode": (False, bool),
        "is_distribution": (False, bool),
        "debug_graphviz_path": ("", str),
        "enable_sequential_execution": (False, bool),
        "enable_backward_optimizer_op_deps": (True, bool),
        "fuse_broadcast_ops": (False, bool),
        "fuse_elewise_add_act_ops": (False, bool),
        "fuse_relu_depthwise_conv": (False, bool),
        "fuse_all_optimizer_ops": (False, bool),
        "fuse_bn_act_ops": (False, bool),
        "enable_auto_fusion": (False, bool),
        "enable_inplace": (False, bool),
        "memory_optimize": (False, bool),
        "remove_unnecessary_lock": (True, bool),
        "cache_runtime_context": (False, bool),
        "mkldnn_enabled_op_types": ([], list),
    }

    def _check(self, name, value):
        if name == "gradient_scale_strategy" and \
                value is _GradientScaleStrategy.Customized:
            raise ValueError(
                "BuildStrategy.gradient_scale_strategy = Customized: there is "
                "no loss gradient to feed here (the backward pass fills it "
                "with 1); scale the loss in the program instead, e.g. "
                "loss = fluid.layers.scale(loss, scale=...), and use "
                "CoeffNumDevice (gradients averaged over the ranks) or One "
                "(summed)")
        if name == "async_mode" and value:
            raise ValueError(
                "BuildStrategy.async_mode = True: asynchronous training needs "
                "parameter servers, which this product does not have; "
                "gradients are averaged by a synchronous allreduce over MPI "
                "ranks (leave async_mode False)")
        if name == "nccl_comm_num" and value < 1:
            raise ValueError(f"BuildStrategy.nccl_comm_num must be >= 1, got "
                             f"{value}")


class ExecutionStrategy(_Fields):
    """How a compiled program is run (Fluid 1.x's class). num_threads is
    the executor's thread count (0, the default: 1);
    num_iteration_per_drop_scope, use_experimental_executor,
    allow_op_delay and use_thread_barrier are accepted and change nothing
    (temporaries live in the prepared program); num_iteration_per_run must
    stay 1 (one step per run)."""

    _FIELDS = {
        "num_threads": (0, int),
        "num_iteration_per_drop_scope": (100, int),
        "num_iteration_per_run": (1, int),
        "use_experimental_executor": (False, bool),
        "allow_op_delay": (False, bool),
        "use_thread_barrier": (False, bool),
    }

    def _check(self, name, value):
        if name == "num_iteration_per_run" and value != 1:
            raise ValueError(
                f"ExecutionStrategy.num_iteration_per_run = {value}: each "
                "run is one step on the batch it is fed; call exe.run once "
                "per step (leave it 1)")


def _apply_build_strategy(build, strategy):
    """Writes the fields of `build` (a BuildStrategy) that were set and
    mean something here into `strategy` (a fluid.DistributedStrategy)."""
    chosen = build._set
    if chosen.get("reduce_strategy") is _ReduceStrategy.Reduce:
        strategy.sharding = True
        strategy.sharding_configs = {"stage": 2}
    if "gradient_scale_strategy" in chosen:
        strategy.average_gradients = chosen["gradient_scale_strategy"] is \
            _GradientScaleStrategy.CoeffNumDevice
    if chosen.get("fuse_all_reduce_ops") is False:
        strategy.bucket_bytes = 1  # a bucket per gradient
    if "sync_batch_norm" in chosen:
        strategy.sync_batch_norm = chosen["sync_batch_norm"]
    if "use_hierarchical_allreduce" in chosen:
        strategy.hierarchical_allreduce = \
            chosen["use_hierarchical_allreduce"]


def _strategy_of(build_strategy, where):
    """The fluid.DistributedStrategy a run with `build_strategy` uses: a
    BuildStrategy mapped onto the defaults, or a DistributedStrategy
    (Fleet's carries a BuildStrategy of its own, applied on top)."""
    if build_strategy is None:
        return DistributedStrategy()
    if isinstance(build_strategy, DistributedStrategy):
        strategy = build_strategy.copy()
        build = getattr(build_strategy, "_build_strategy", None)
    elif isinstance(build_strategy, BuildStrategy):
        strategy, build = DistributedStrategy(), build_strategy
    else:
        raise TypeError(f"{where}: build_strategy takes a "
                        "fluid.BuildStrategy (or a fluid.DistributedStrategy)"
                        f", got {type(build_strategy).__name__}")
    if build is not None:
        _apply_build_strategy(build, strategy)
    try:
        return strategy.validate()
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def _check_trainers(build_strategy, where):
    """num_trainers and trainer_id, when set, are the launcher's."""
    build = build_strategy if isinstance(build_strategy, BuildStrategy) \
        else getattr(build_strategy, "_build_strategy", None)
    if build is None:
        return
    world, rank = _LAUNCHED_RANKS, _core.launcher_rank()
    n = build._set.get("num_trainers")
    if n is not None and n != world:
        raise ValueError(
            f"{where}: BuildStrategy.num_trainers = {n}, but this process is "
            f"one of {world} rank(s): the ranks are the processes mpirun "
            f"starts (mpirun -np {max(n, 1)} python3 train.py); leave "
            "num_trainers unset or equal to the world size")
    tid = build._set.get("trainer_id")
    if tid is not None and tid != rank:
        raise ValueError(
            f"{where}: BuildStrategy.trainer_id = {tid}, but mpirun started "
            f"this process as rank {rank}; leave trainer_id unset or equal "
            "to the rank")
    eps = build._set.get("trainers_endpoints")
    if eps and len(eps) != world:
        raise ValueError(
            f"{where}: BuildStrategy.trainers_endpoints names {len(eps)} "
            f"trainer(s), but this process is one of {world} rank(s)")
