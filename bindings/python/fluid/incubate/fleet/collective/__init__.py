"""Fleet's collective mode (Fluid 1.5-1.8), over fluid.MPIExecutor's engine.

    from fluid.incubate.fleet.collective import fleet, DistributedStrategy
    from fluid.incubate.fleet.base import role_maker

    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    strategy = DistributedStrategy()
    optimizer = fleet.distributed_optimizer(
        fluid.optimizer.SGD(0.1), strategy=strategy)
    optimizer.minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.startup_program)
    exe.run(fleet.main_program, feed=..., fetch_list=[loss.name])

launched as `mpirun -np N python3 train.py`. fleet.main_program is a
fluid.CompiledProgram made data-parallel with the strategy, so a plain
fluid.Executor runs it as a step over all ranks (see fluid.compiler);
fleet.startup_program is the startup program, whose values rank 0 gives
every rank at the first step.

DistributedStrategy is fluid.DistributedStrategy (every field of
proto/distributed_strategy.proto, Fleet 2's names such as
fuse_grad_size_in_MB), with Fluid 1.x's collective fields on top: those of
fluid.BuildStrategy, mapped as a BuildStrategy's are, and mode,
collective_mode, nccl_comm_num, exec_strategy, forward_recompute and
recompute_checkpoints (fluid.optimizer.RecomputeOptimizer around the
optimizer), use_local_sgd, use_dist_fc, use_amp (refused where this product
has no such thing)."""
from .... import _core
from ....compiler import BuildStrategy, CompiledProgram, ExecutionStrategy
from ....distributed_strategy import DistributedStrategy as _Strategy
from ....executor import Scope, global_scope
from ....framework import (Program, default_main_program,
                           default_startup_program, program_guard)
from .... import io as _io
from .... import layers as _layers
from .... import unique_name as _unique_name
from ..base import role_maker as _role_maker

__all__ = ["fleet", "DistributedStrategy", "CollectiveOptimizer",
           "Collective"]


def _refuse_true(name, why):
    def check(value):
        if value:
            raise ValueError(f"DistributedStrategy.{name} = True: {why}; "
                             f"leave {name} False")
    return check


def _one_of(name, allowed, why=""):
    def check(value):
        if value not in allowed:
            raise ValueError(
                f"DistributedStrategy.{name} = {value!r}: {why}use one of "
                f"{', '.join(map(repr, allowed))}")
    return check


def _positive_int(name):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, int) or \
                value < 1:
            raise ValueError(f"DistributedStrategy.{name} takes an int >= 1, "
                             f"got {value!r}")
    return check


def _is_bool(name):
    def check(value):
        if not isinstance(value, bool):
            raise ValueError(f"DistributedStrategy.{name} takes True or "
                             f"False, got {value!r}")
    return check


def _checkpoint_list(value):
    if not isinstance(value, (list, tuple)):
        raise ValueError("DistributedStrategy.recompute_checkpoints takes a "
                         f"list of Variables or names, got {value!r}")


def _exec_strategy(value):
    if not isinstance(value, ExecutionStrategy):
        raise TypeError("DistributedStrategy.exec_strategy takes a "
                        f"fluid.ExecutionStrategy, got {type(value).__name__}")


# Fluid 1.x's collective fields that are not a BuildStrategy's: default and
# check (a value without meaning here is refused, saying so).
_COLLECTIVE_FIELDS = {
    "mode": ("nccl2", _one_of("mode", ("nccl2", "collective"))),
    "collective_mode": (None, _one_of(
        "collective_mode", (None, "grad_allreduce"),
        "local SGD is not available here (gradients are allreduced every "
        "step); ")),
    "nccl_comm_num": (1, _positive_int("nccl_comm_num")),
    "use_local_sgd": (False, _refuse_true(
        "use_local_sgd", "local SGD is not available here; gradients are "
        "allreduced every step")),
    "use_dist_fc": (False, _refuse_true(
        "use_dist_fc", "a fully connected layer split across ranks is not "
        "available here; every rank holds every parameter")),
    "dist_fc_config": (None, lambda value: None),
    "forward_recompute": (False, _is_bool("forward_recompute")),
    "recompute_checkpoints": ([], _checkpoint_list),
    "use_amp": (False, _refuse_true(
        "use_amp", "mixed-precision training is not available here; "
        "fp16_allreduce halves the bytes the gradients travel in")),
    "amp_loss_scaling": (2 ** 15, lambda value: None),
    "exec_strategy": (None, _exec_strategy),
}

# The BuildStrategy fields a Fleet strategy has: all but those that are
# fields of the strategy itself (which stay its own).
_OWN_FIELDS = {p.split(".")[0] for p in _core.strategy_fields(b"")}
_BUILD_FIELDS = [f for f in BuildStrategy._FIELDS if f not in _OWN_FIELDS]


class DistributedStrategy(_Strategy):
    """Fleet 1.x's collective DistributedStrategy: a fluid.DistributedStrategy
    (its fields and Fleet 2's names) that also takes Fluid 1.x's
    collective settings. The fields of fluid.BuildStrategy it has
    (reduce_strategy, fuse_all_reduce_ops, use_hierarchical_allreduce, ...)
    map onto the strategy as a BuildStrategy's do when the program is
    compiled; mode ("nccl2" or "collective": both allreduce gradients),
    collective_mode (None or "grad_allreduce"), nccl_comm_num (accepted;
    one communicator here) and exec_strategy are kept; forward_recompute
    wraps the optimizer in fluid.optimizer.RecomputeOptimizer with
    recompute_checkpoints (empty: the checkpoints "auto" chooses);
    use_local_sgd, use_dist_fc and use_amp must stay False."""

    def __init__(self):
        super().__init__()
        object.__setattr__(self, "_build_strategy", BuildStrategy())
        object.__setattr__(self, "_collective", {})


def _collective_property(name):
    default, check = _COLLECTIVE_FIELDS[name]

    def get(self):
        if name == "exec_strategy" and name not in self._collective:
            self._collective[name] = ExecutionStrategy()
        return self._collective.get(name, default)

    def set_(self, value):
        check(value)
        self._collective[name] = value
    return property(get, set_, doc=f"Fluid 1.x's {name}.")


def _build_property(name):
    def get(self):
        return getattr(self._build_strategy, name)

    def set_(self, value):
        setattr(self._build_strategy, name, value)
    return property(get, set_, doc=f"fluid.BuildStrategy.{name}.")


for _name in _COLLECTIVE_FIELDS:
    setattr(DistributedStrategy, _name, _collective_property(_name))
for _name in _BUILD_FIELDS:
    if _name not in _COLLECTIVE_FIELDS:
        setattr(DistributedStrategy, _name, _build_property(_name))


class CollectiveOptimizer:
    """What fleet.distributed_optimizer returns: the optimizer, whose
    minimize also records the programs on fleet (main_program, a
    data-parallel CompiledProgram; startup_program)."""

    def __init__(self, optimizer, strategy, fleet):
        self._optimizer = optimizer
        self._strategy = strategy
        self._fleet = fleet

    def minimize(self, loss, startup_program=None, parameter_list=None,
                 no_grad_set=None):
        """The optimizer's minimize (call it inside the program_guard of the
        programs, as usual); returns (optimize_ops, params_grads)."""
        self._fleet._role("distributed_optimizer(...).minimize")
        startup = startup_program or default_startup_program()
        optimizer = self._optimizer
        if isinstance(self._strategy, DistributedStrategy) and \
                self._strategy.forward_recompute:
            # Fluid 1.x's recompute fields: RecomputeOptimizer (an empty
            # list: the checkpoints "auto" chooses).
            from ....optimizer import RecomputeOptimizer
            optimizer = RecomputeOptimizer(optimizer)
            optimizer._set_checkpoints(
                list(self._strategy.recompute_checkpoints) or "auto")
        ops, params_grads = optimizer.minimize(
            loss, startup_program=startup, parameter_list=parameter_list,
            no_grad_set=no_grad_set)
        main = loss.program
        exec_strategy = self._strategy.exec_strategy \
            if isinstance(self._strategy, DistributedStrategy) else None
        compiled = CompiledProgram(main).with_data_parallel(
            loss_name=loss.name, build_strategy=self._strategy,
            exec_strategy=exec_strategy)
        compiled._startup = startup
        if isinstance(self._strategy, DistributedStrategy) and \
                self._strategy.defer_startup:
            # exe.run(startup) then waits for the first training step,
            # which runs it transpiled (fluid.compiler._deferred_startup).
            startup._defer_startup = True
        fleet = self._fleet
        fleet._origin_program = main
        fleet._transpiled_program = main
        fleet.main_program = compiled
        fleet.startup_program = startup
        return ops, params_grads

    def backward(self, *args, **kwargs):
        """Fluid's two-step minimize is not split here; call minimize."""
        raise NotImplementedError(
            "CollectiveOptimizer.backward/apply_gradients: call "
            "minimize(loss), which appends both")

    apply_gradients = backward


class Collective:
    """Fleet in collective mode: the object `fleet` of this module."""

    def __init__(self):
        self._role_maker = None
        self._origin_program = None
        self._transpiled_program = None
        self.main_program = None
        self.startup_program = None

    def init(self, role_maker=None):
        """Takes the role maker (default: PaddleCloudRoleMaker(
        is_collective=True), the MPI launcher's rank and size)."""
        if role_maker is None:
            role_maker = _role_maker.PaddleCloudRoleMaker(is_collective=True)
        if not isinstance(role_maker, _role_maker.RoleMakerBase):
            raise TypeError("fleet.init(role_maker=...) takes a role maker of "
                            "fluid.incubate.fleet.base.role_maker, got "
                            f"{type(role_maker).__name__}")
        role_maker.generate_role()
        self._role_maker = role_maker

    def _role(self, where):
        if self._role_maker is None:
            raise RuntimeError(f"fleet.{where}: call fleet.init(role_maker) "
                               "first")
        return self._role_maker

    def is_first_worker(self):
        """True on worker 0."""
        return self._role("is_first_worker()").is_first_worker()

    def worker_index(self):
        """This process's rank."""
        return self._role("worker_index()").worker_index()

    def worker_num(self):
        """The number of ranks."""
        return self._role("worker_num()").worker_num()

    def is_worker(self):
        """True: every process is a worker."""
        return self._role("is_worker()").is_worker()

    def is_server(self):
        """False: there are no parameter servers."""
        return self._role("is_server()").is_server()

    def worker_endpoints(self, to_string=False):
        """The workers' endpoints (see RoleMakerBase.get_trainer_endpoints);
        joined by "," with to_string."""
        eps = self._role("worker_endpoints()").get_trainer_endpoints()
        return ",".join(eps) if to_string else eps

    def server_num(self):
        """0: there are no parameter servers."""
        return 0

    def server_endpoints(self, to_string=False):
        """No parameter servers: [] ("" with to_string)."""
        return "" if to_string else []

    def barrier_worker(self):
        """Waits until every rank has called it."""
        self._role("barrier_worker()").barrier_worker()

    def init_worker(self):
        """Nothing to do: a worker needs no server connection."""

    def stop_worker(self):
        """Nothing to do: a worker holds no server connection."""

    def init_server(self, *args, **kwargs):
        """Refused: there are no parameter servers."""
        raise NotImplementedError(
            "fleet.init_server: collective mode has no servers; every "
            "process is a worker (run the training program on every rank)")

    run_server = init_server

    def split_files(self, files):
        """This worker's part of `files` (a list): consecutive slices, the
        first len(files) % worker_num workers one file more."""
        if not isinstance(files, list):
            raise TypeError("fleet.split_files takes a list of files, got "
                            f"{type(files).__name__}")
        n, i = self.worker_num(), self.worker_index()
        size, extra = divmod(len(files), n)
        begin = i * size + min(i, extra)
        return files[begin:begin + size + (1 if i < extra else 0)]

    def distributed_optimizer(self, optimizer, strategy=None):
        """Wraps `optimizer` (a fluid.optimizer) for data-parallel training
        with `strategy` (a DistributedStrategy of this module or a
        fluid.DistributedStrategy; default: DistributedStrategy())."""
        self._role("distributed_optimizer()")
        if strategy is None:
            strategy = DistributedStrategy()
        if not isinstance(strategy, _Strategy):
            raise TypeError(
                "fleet.distributed_optimizer(strategy=...) takes a "
                "DistributedStrategy (from fluid.incubate.fleet.collective, "
                f"or fluid.DistributedStrategy), got "
                f"{type(strategy).__name__}")
        if not hasattr(optimizer, "minimize"):
            raise TypeError("fleet.distributed_optimizer takes an optimizer "
                            "of fluid.optimizer, got "
                            f"{type(optimizer).__name__}")
        return CollectiveOptimizer(optimizer, strategy, self)

    def _program(self, main_program, where):
        program = main_program if main_program is not None \
            else self._origin_program
        if isinstance(program, CompiledProgram):
            program = program.program
        if program is not None and not isinstance(program, Program):
            raise TypeError(f"fleet.{where}(main_program=...) takes a "
                            "fluid.Program or CompiledProgram, got "
                            f"{type(program).__name__}")
        return program

    def save_persistables(self, executor, dirname, main_program=None,
                          filename=None):
        """Worker 0 saves every persistable var of `main_program` (default:
        the program minimize built), from the global scope, with
        fluid.io.save_persistables; the other workers write nothing (they
        hold the same values). Call it on every worker: when the optimizer
        state is sharded over them (DistributedStrategy.sharding, which
        reduce_strategy Reduce turns on) each gives its shard, and the
        checkpoint holds the whole state."""
        self._role("save_persistables()")
        program = self._program(main_program, "save_persistables") or \
            default_main_program()
        names = [v.name for v in program.list_vars() if v.persistable]
        _, sharded = _io._sharded_run(executor, program, global_scope(),
                                      names)
        if sharded is not None or self.worker_index() == 0:
            _io.save_persistables(executor, dirname, program,
                                  filename=filename)

    def save_inference_model(self, executor, dirname, feeded_var_names=None,
                             target_vars=None, main_program=None,
                             export_for_deployment=True):
        """Worker 0 saves the inference model (fluid.io.save_inference_model
        of `main_program`, default: the program minimize built); the others
        write nothing."""
        self._role("save_inference_model()")
        program = self._program(main_program, "save_inference_model")
        if self.worker_index() == 0:
            _io.save_inference_model(
                dirname, feeded_var_names, target_vars, executor, program,
                export_for_deployment=export_for_deployment)


fleet = Collective()


# ---- a barrier over the ranks ----

_BARRIER = {}


def _barrier():
    """Waits until every rank has called it: a startup program with one
    variable run by a native MPIExecutor, which compares the program across
    ranks (an all-gather) and broadcasts the variable."""
    if _core.launcher_world_size() <= 1:
        return
    if not _BARRIER:
        main, startup = Program(), Program()
        with _unique_name.guard(), program_guard(main, startup):
            _layers.create_global_var([1], 0.0, "float32", persistable=True,
                                      name="fleet_barrier")
        _BARRIER.update(probe=_core.MPIExecutor(1, -1), startup=startup,
                        scope=Scope())
    _BARRIER["probe"].run_startup(_BARRIER["startup"].desc,
                                  _BARRIER["scope"]._core)
