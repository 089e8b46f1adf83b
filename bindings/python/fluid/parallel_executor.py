"""fluid.ParallelExecutor (Fluid 1.0-1.8): a program with its executor,
data-parallel over the ranks mpirun started, one place per process. It is
a fluid.Executor running a CompiledProgram made data-parallel (see
fluid.compiler): the same engine as fluid.MPIExecutor."""
from .compiler import CompiledProgram, ExecutionStrategy, _feed_dict
from .executor import CPUPlace, CUDAPlace, Executor, global_scope
from .framework import default_main_program


class ParallelExecutor:
    """ParallelExecutor(use_cuda, loss_name=None, main_program=None,
    share_vars_from=None, exec_strategy=None, build_strategy=None,
    num_trainers=1, trainer_id=0, scope=None), as in Fluid 1.x.

    use_cuda picks the place: this rank's CUDA device (CUDAPlace()) or the
    CPU. Run the startup program first, with any fluid.Executor, on the
    same scope; the first `run` gives every rank rank 0's values of what it
    initialised. num_trainers and trainer_id, when not 1 and 0, must be the
    MPI launcher's world size and rank (the ranks are the processes of
    `mpirun -np N`); build_strategy and exec_strategy are as for
    CompiledProgram.with_data_parallel."""

    def __init__(self, use_cuda, loss_name=None, main_program=None,
                 share_vars_from=None, exec_strategy=None,
                 build_strategy=None, num_trainers=1, trainer_id=0,
                 scope=None):
        if not isinstance(use_cuda, (bool, int)) or use_cuda not in (0, 1):
            raise TypeError("ParallelExecutor(use_cuda=...) takes True or "
                            f"False, got {use_cuda!r}")
        if share_vars_from is not None and \
                not isinstance(share_vars_from, ParallelExecutor):
            raise TypeError("ParallelExecutor(share_vars_from=...) takes a "
                            "ParallelExecutor, got "
                            f"{type(share_vars_from).__name__}")
        build_strategy = _with_trainers(build_strategy, num_trainers,
                                        trainer_id)
        exec_strategy = exec_strategy or ExecutionStrategy()
        self._place = CUDAPlace() if bool(use_cuda) else CPUPlace()
        self._scope = scope or global_scope()
        self._compiled = CompiledProgram(
            main_program or default_main_program()).with_data_parallel(
                loss_name=loss_name, build_strategy=build_strategy,
                exec_strategy=exec_strategy,
                share_vars_from=share_vars_from._compiled
                if share_vars_from is not None else None)
        self._exe = Executor(self._place)

    @property
    def device_count(self):
        """The places this process runs on: 1 (one place per process; the
        ranks of mpirun are the other devices)."""
        return 1

    def run(self, fetch_list, feed=None, feed_dict=None, return_numpy=True):
        """Runs one step; returns the fetched values (this rank's) in
        fetch_list order. feed: {name: array}, or a list of one such dict
        (one place per process); feed_dict is its older name."""
        if feed is not None and feed_dict is not None:
            raise ValueError("ParallelExecutor.run: give feed or feed_dict "
                             "(its older name), not both")
        feed = _feed_dict(feed if feed is not None else feed_dict,
                          "ParallelExecutor.run")
        return self._exe.run(self._compiled, feed=feed, fetch_list=fetch_list,
                             scope=self._scope, return_numpy=return_numpy)

    def drop_local_exe_scopes(self):
        """Fluid's release of per-device temporaries; here they live in the
        prepared program, so there is nothing to drop."""


def _with_trainers(build_strategy, num_trainers, trainer_id):
    """build_strategy with ParallelExecutor's num_trainers and trainer_id
    set on it when they are not the defaults (checked against the
    launcher by with_data_parallel)."""
    if num_trainers == 1 and trainer_id == 0:
        return build_strategy
    from .compiler import BuildStrategy
    if build_strategy is None:
        build_strategy = BuildStrategy()
    if not isinstance(build_strategy, BuildStrategy):
        raise TypeError("ParallelExecutor(build_strategy=...) takes a "
                        "fluid.BuildStrategy, got "
                        f"{type(build_strategy).__name__}")
    if num_trainers != 1:
        build_strategy.num_trainers = num_trainers
    if trainer_id != 0:
        build_strategy.trainer_id = trainer_id
    return build_strategy
