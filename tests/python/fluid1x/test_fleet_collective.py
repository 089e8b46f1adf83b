"""Fleet's collective mode (fluid.incubate.fleet) as Fluid 1.5-1.8 scripts
use it: under mpirun (train_fleet.py at np 1 and 2) fleet.init, the
distributed optimizer and a plain fluid.Executor running fleet.main_program
train data-parallel (the loss falls, every rank ends with bitwise the same
parameters, bitwise fluid.MPIExecutor's with the same strategy),
the worker's index, count and endpoints are the launcher's, and worker 0
saves. In one process: the role makers' checks against the launcher, the
strategy's 1.x fields, and what is refused (parameter servers, local SGD,
recompute, AMP)."""
import os

import numpy as np
import pytest

import fluid
from fluid.incubate.fleet.base import role_maker
from fluid.incubate.fleet.collective import (CollectiveOptimizer,
                                             DistributedStrategy, fleet)
from fluid1x_common import assert_trained_alike, load_results, mpirun


@pytest.mark.parametrize("nranks", [1, 2])
def test_fleet_training_under_mpirun(tmp_path, nranks):
    r = mpirun("train_fleet.py", nranks, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = load_results(tmp_path, "fleet", nranks)
    assert_trained_alike(runs)
    for rank, run in enumerate(runs):
        assert int(run["extra/worker_index"]) == rank
        assert int(run["extra/worker_num"]) == nranks
        assert bool(run["extra/first"]) == (rank == 0)
        assert not bool(run["extra/server"])
        assert str(run["extra/endpoints"]) == ",".join(
            f"mpi:{i}" for i in range(nranks))
        assert bool(run["extra/saved_after_barrier"])
    assert os.path.isfile(tmp_path / "model" / "__model__")
    # worker 0's persistables load back into the program's scope
    main, startup, _, _ = fleet_like_program()
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    fluid.io.load_persistables(exe, str(tmp_path / "persistables"), main,
                               scope=scope)
    for name in ("fc_0.w_0", "fc_1.b_0"):
        assert np.array_equal(scope.get(name), runs[0]["param/" + name])


def fleet_like_program():
    import train_fleet
    return train_fleet.build_fresh()


# ---- one process ----

@pytest.fixture
def fresh_fleet():
    fleet._role_maker = None
    fleet.main_program = fleet.startup_program = None
    yield fleet
    fleet._role_maker = None


def build_in(main, startup):
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(
            fluid.layers.fc(input=x, size=1), y))
    return loss


def test_world_of_one(fresh_fleet):
    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    assert fleet.worker_index() == 0 and fleet.worker_num() == 1
    assert fleet.is_first_worker() and fleet.is_worker()
    assert not fleet.is_server() and fleet.server_num() == 0
    assert fleet.worker_endpoints() == ["mpi:0"]
    assert fleet.worker_endpoints(to_string=True) == "mpi:0"
    fleet.barrier_worker()
    fleet.init_worker()
    fleet.stop_worker()
    assert fleet.split_files(["a", "b", "c"]) == ["a", "b", "c"]

    main, startup = fluid.Program(), fluid.Program()
    loss = build_in(main, startup)
    with fluid.program_guard(main, startup):
        opt = fleet.distributed_optimizer(fluid.optimizer.SGD(0.2))
        assert isinstance(opt, CollectiveOptimizer)
        opt.minimize(loss)
    assert isinstance(fleet.main_program, fluid.CompiledProgram)
    assert fleet.startup_program is startup
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.startup_program, scope=scope)
    rng = np.random.RandomState(0)
    losses = []
    for _ in range(6):
        x = rng.rand(4, 3).astype(np.float32)
        y = x.sum(axis=1, keepdims=True).astype(np.float32)
        losses.append(float(exe.run(fleet.main_program, feed={"x": x, "y": y},
                                    fetch_list=[loss.name], scope=scope)[0]))
    assert losses[-1] < losses[0]


def test_role_makers_check_the_launcher(monkeypatch):
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "4")
    with pytest.raises(ValueError, match=r"PADDLE_TRAINERS_NUM says 4, but "
                       r"the MPI launcher's world size is 1.*mpirun -np N"):
        role_maker.PaddleCloudRoleMaker(is_collective=True).generate_role()
    monkeypatch.delenv("PADDLE_TRAINERS_NUM")
    monkeypatch.setenv("PADDLE_TRAINER_ID", "2")
    with pytest.raises(ValueError, match="PADDLE_TRAINER_ID says 2.*rank "
                       "is 0"):
        role_maker.PaddleCloudRoleMaker(is_collective=True).worker_index()
    monkeypatch.setenv("PADDLE_TRAINER_ID", "0")
    monkeypatch.setenv("PADDLE_TRAINER_ENDPOINTS", "10.0.0.1:6170")
    role = role_maker.PaddleCloudRoleMaker(is_collective=True)
    assert role.get_trainer_endpoints() == ["10.0.0.1:6170"]
    with pytest.raises(ValueError, match=r"worker 1 of 2, but the MPI "
                       r"launcher started this process as rank 0 of 1.*"
                       r"mpirun -np 2"):
        role_maker.UserDefinedCollectiveRoleMaker(
            1, ["h1:6170", "h2:6170"]).generate_role()
    role = role_maker.UserDefinedCollectiveRoleMaker(0, ["h1:6170"])
    assert role.worker_num() == 1 and role.get_trainer_endpoints() == \
        ["h1:6170"]
    assert role_maker.MPIRoleMaker().worker_num() == 1
    with pytest.raises(ValueError, match="current_id=5"):
        role_maker.UserDefinedCollectiveRoleMaker(5, ["h1:6170"])
    with pytest.raises(ValueError, match="non-empty list"):
        role_maker.UserDefinedCollectiveRoleMaker(0, None)


def test_parameter_server_role_makers_are_refused():
    with pytest.raises(ValueError, match="is_collective=False.*no parameter "
                       "server.*is_collective=True"):
        role_maker.PaddleCloudRoleMaker()
    for make in (lambda: role_maker.UserDefinedRoleMaker(
                     0, role_maker.Role.SERVER, 2, ["127.0.0.1:6170"]),
                 role_maker.MPISymetricRoleMaker,
                 role_maker.GeneralRoleMaker):
        with pytest.raises(ValueError, match="parameter servers.*"
                           "UserDefinedCollectiveRoleMaker"):
            make()


def test_parameter_server_fleet_is_refused():
    with pytest.raises(ImportError, match="no parameter servers.*"
                       "fluid.incubate.fleet.collective import fleet"):
        import fluid.incubate.fleet.parameter_server  # noqa: F401
    with pytest.raises(ImportError, match="no parameter servers"):
        from fluid.incubate.fleet.parameter_server import \
            distribute_transpiler  # noqa: F401
    with pytest.raises(NotImplementedError, match="no servers"):
        fleet.init_server()
    with pytest.raises(NotImplementedError, match="no servers"):
        fleet.run_server()


def test_strategy_is_fluids_with_the_1x_fields():
    s = DistributedStrategy()
    assert isinstance(s, fluid.DistributedStrategy)
    assert s.mode == "nccl2" and s.collective_mode is None
    assert s.nccl_comm_num == 1 and s.use_local_sgd is False
    assert isinstance(s.exec_strategy, fluid.ExecutionStrategy)
    s.mode = "collective"
    s.collective_mode = "grad_allreduce"
    s.nccl_comm_num = 3
    s.use_hierarchical_allreduce = True
    s.fuse_all_reduce_ops = False
    s.reduce_strategy = fluid.BuildStrategy.ReduceStrategy.Reduce
    s.fuse_grad_size_in_MB = 2      # Fleet 2's names are there too
    s.sync_batch_norm = True        # the strategy's own field
    s.enable_inplace = True         # accepted, no effect
    run = fluid.compiler._strategy_of(s, "test")
    assert run.allreduce_hierarchy == "hier"
    assert run.bucket_bytes == 1    # fuse_all_reduce_ops=False wins
    assert run.sharding and run.sync_batch_norm


@pytest.mark.parametrize("field,value,message", [
    ("use_local_sgd", True, "local SGD is not available"),
    ("collective_mode", "local_sgd", "local SGD is not available"),
    ("mode", "pserver", "use one of 'nccl2', 'collective'"),
    ("use_dist_fc", True, "split across ranks"),
    ("forward_recompute", 1, "True or False"),
    ("recompute_checkpoints", "h", "list of Variables or names"),
    ("use_amp", True, "mixed-precision"),
    ("nccl_comm_num", 0, "int >= 1"),
    ("gradient_scale_strategy",
     fluid.BuildStrategy.GradientScaleStrategy.Customized, "scale the loss"),
    ("async_mode", True, "parameter servers"),
])
def test_refused_strategy_fields(field, value, message):
    with pytest.raises(ValueError, match=message):
        setattr(DistributedStrategy(), field, value)


def test_fleet_needs_init_and_right_arguments(fresh_fleet):
    with pytest.raises(RuntimeError, match=r"call fleet.init\(role_maker\)"):
        fleet.worker_index()
    with pytest.raises(RuntimeError, match="fleet.init"):
        fleet.distributed_optimizer(fluid.optimizer.SGD(0.1))
    with pytest.raises(TypeError, match="role maker"):
        fleet.init("worker")
    fleet.init()
    with pytest.raises(TypeError, match="DistributedStrategy"):
        fleet.distributed_optimizer(fluid.optimizer.SGD(0.1),
                                    strategy=fluid.BuildStrategy())
    with pytest.raises(TypeError, match="optimizer"):
        fleet.distributed_optimizer("sgd")
    with pytest.raises(TypeError, match="list of files"):
        fleet.split_files("a,b")


def test_split_files_gives_each_worker_its_share(fresh_fleet, monkeypatch):
    class Four(role_maker.RoleMakerBase):
        def __init__(self, rank):
            super().__init__()
            self._r = rank

        def _generate(self):
            self._rank, self._size = self._r, 4
    files = [f"part-{i}" for i in range(10)]
    shares = []
    for rank in range(4):
        fleet._role_maker = Four(rank)
        shares.append(fleet.split_files(files))
    assert [len(s) for s in shares] == [3, 3, 2, 2]
    assert sum(shares, []) == files
