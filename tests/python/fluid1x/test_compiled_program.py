"""fluid.CompiledProgram, BuildStrategy, ExecutionStrategy, cpu_places and
cuda_places, as Fluid 1.5-1.8 scripts use them.

Under mpirun (train_compiled.py at np 1 and 2): a plain fluid.Executor
running a data-parallel CompiledProgram trains (the loss falls), every rank
ends with bitwise the same parameters, and bitwise those (and the losses)
of fluid.MPIExecutor run with the DistributedStrategy the BuildStrategy
stands for: AllReduce, Reduce (sharding), One with unfused allreduces. A
warm start made on rank 0 only reaches every rank at the first step. In one process: the mapping onto the strategy, a world of one
running the program as it is, and the errors for what is refused."""
import numpy as np
import pytest

import fluid
from fluid1x_common import assert_trained_alike, load_results, mpirun

TAGS = ("allreduce", "reduce", "one_unfused")


@pytest.mark.parametrize("nranks", [1, 2])
def test_data_parallel_training_under_mpirun(tmp_path, nranks):
    r = mpirun("train_compiled.py", nranks, tmp_path, "--warm-start-on-rank-0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "trained with allreduce, reduce, one_unfused" in r.stdout
    for tag in TAGS:
        runs = load_results(tmp_path, tag, nranks)
        assert_trained_alike(runs)


def build(seed=1):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        pred = fluid.layers.fc(input=x, size=1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return main, startup, loss


def batch(step):
    rng = np.random.RandomState(step)
    x = rng.rand(8, 4).astype(np.float32)
    return {"x": x, "y": x.sum(axis=1, keepdims=True).astype(np.float32)}


def strategy(build_strategy):
    return fluid.compiler._strategy_of(build_strategy, "test")


# ---- the mapping onto fluid.DistributedStrategy ----

def test_defaults_are_fluids_and_map_to_the_default_strategy():
    bs = fluid.BuildStrategy()
    assert bs.reduce_strategy is fluid.BuildStrategy.ReduceStrategy.AllReduce
    assert bs.gradient_scale_strategy is \
        fluid.BuildStrategy.GradientScaleStrategy.CoeffNumDevice
    assert bs.num_trainers == 1 and bs.trainer_id == 0
    assert bs.sync_batch_norm is False and bs.enable_inplace is False
    assert strategy(bs) == fluid.DistributedStrategy()
    assert strategy(None) == fluid.DistributedStrategy()
    es = fluid.ExecutionStrategy()
    assert es.num_threads == 0 and es.num_iteration_per_drop_scope == 100
    assert fluid.compiler.CompiledProgram is fluid.CompiledProgram


def test_fields_with_a_meaning_map_onto_the_strategy():
    bs = fluid.BuildStrategy()
    bs.reduce_strategy = fluid.BuildStrategy.ReduceStrategy.Reduce
    bs.gradient_scale_strategy = fluid.BuildStrategy.GradientScaleStrategy.One
    bs.fuse_all_reduce_ops = False
    bs.sync_batch_norm = True
    bs.use_hierarchical_allreduce = True
    s = strategy(bs)
    assert s.sharding and s.sharding_configs["stage"] == 2
    assert s.average_gradients is False
    assert s.bucket_bytes == 1
    assert s.sync_batch_norm is True
    assert s.allreduce_hierarchy == "hier"
    bs = fluid.BuildStrategy()
    bs.gradient_scale_strategy = \
        fluid.BuildStrategy.GradientScaleStrategy.CoeffNumDevice
    bs.fuse_all_reduce_ops = True
    assert strategy(bs) == fluid.DistributedStrategy()


def test_graph_options_are_accepted_and_change_nothing():
    bs = fluid.BuildStrategy()
    for name in ("enable_inplace", "memory_optimize",
                 "fuse_elewise_add_act_ops", "fuse_relu_depthwise_conv",
                 "fuse_broadcast_ops",
                 "enable_sequential_execution", "fuse_all_optimizer_ops"):
        setattr(bs, name, True)
        assert getattr(bs, name) is True
    bs.debug_graphviz_path = "/tmp/graph"
    bs.nccl_comm_num = 2
    assert strategy(bs) == fluid.DistributedStrategy()
    es = fluid.ExecutionStrategy()
    es.num_threads = 2
    es.num_iteration_per_drop_scope = 10
    es.use_experimental_executor = True
    es.allow_op_delay = True


# ---- one process ----

def test_world_of_one_runs_the_program_as_it_is():
    main, startup, loss = build()
    plain_scope, compiled_scope = fluid.Scope(), fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=plain_scope)
    exe.run(startup, scope=compiled_scope)
    compiled = fluid.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, places=fluid.cpu_places(1))
    want, got = [], []
    for step in range(5):
        want.append(exe.run(main, feed=batch(step), fetch_list=[loss],
                            scope=plain_scope)[0])
        got.append(exe.run(compiled, feed=[batch(step)], fetch_list=[loss],
                           scope=compiled_scope)[0])
    assert np.array_equal(np.array(want), np.array(got))
    assert got[-1] < got[0]
    w = main.all_parameters()[0].name
    assert np.array_equal(plain_scope.get(w), compiled_scope.get(w))


def test_a_compiled_program_without_data_parallel_runs_as_it_is():
    main, startup, loss = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    (value,) = exe.run(fluid.CompiledProgram(main), feed=batch(0),
                       fetch_list=[loss], scope=scope)
    assert np.isfinite(value).all()


def test_mpi_executor_runs_a_compiled_program():
    main, startup, loss = build()
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss.name)
    first = exe.run(compiled, feed=batch(0), fetch_list=[loss], scope=scope)
    for step in range(1, 5):
        last = exe.run(compiled, feed=batch(step), fetch_list=[loss],
                       scope=scope)
    assert last[0] < first[0]


def test_mpi_executor_refuses_a_build_strategy_that_disagrees():
    main, startup, loss = build()
    exe = fluid.MPIExecutor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    bs = fluid.BuildStrategy()
    bs.gradient_scale_strategy = fluid.BuildStrategy.GradientScaleStrategy.One
    compiled = fluid.CompiledProgram(main).with_data_parallel(
        build_strategy=bs)
    with pytest.raises(ValueError, match=r"asks for average_gradients=False "
                       r"\(the executor's: True\).*give the strategy to one "
                       "of them only"):
        exe.run(compiled, feed=batch(0), fetch_list=[loss], scope=scope)


# ---- places ----

def test_cpu_places_follows_cpu_num(monkeypatch):
    monkeypatch.delenv("CPU_NUM", raising=False)
    assert len(fluid.cpu_places()) == 1
    monkeypatch.setenv("CPU_NUM", "3")
    assert len(fluid.cpu_places()) == 3
    assert len(fluid.cpu_places(2)) == 2
    assert all(isinstance(p, fluid.CPUPlace) for p in fluid.cpu_places())
    monkeypatch.setenv("CPU_NUM", "many")
    with pytest.raises(ValueError, match="CPU_NUM='many'"):
        fluid.cpu_places()
    with pytest.raises(ValueError, match="positive int, got 0"):
        fluid.cpu_places(0)


def test_cuda_places(monkeypatch):
    monkeypatch.delenv("FLAGS_selected_gpus", raising=False)
    if not fluid.is_compiled_with_cuda():
        with pytest.raises(NotImplementedError, match="no CUDA.*cpu_places"):
            fluid.cuda_places()
        return
    count = fluid.cuda_device_count()
    places = fluid.cuda_places()
    assert [p.device_id for p in places] == list(range(count))
    with pytest.raises(ValueError, match=f"device id {count}: {count} CUDA "
                       "device"):
        fluid.cuda_places([count])
    monkeypatch.setenv("FLAGS_selected_gpus", "0,x")
    with pytest.raises(ValueError, match="FLAGS_selected_gpus='0,x'"):
        fluid.cuda_places()
    monkeypatch.setenv("FLAGS_selected_gpus", str(count))
    with pytest.raises(ValueError, match=f"device id {count}"):
        fluid.cuda_places()


def test_several_places_in_one_process_say_how_to_launch(monkeypatch):
    main, startup, loss = build()
    with pytest.raises(ValueError, match=r"4 places in one process.*"
                       r"mpirun -np 4 python3 train.py"):
        fluid.CompiledProgram(main).with_data_parallel(
            loss_name=loss.name, places=fluid.cpu_places(4))
    monkeypatch.setenv("CPU_NUM", "4")
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss.name)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(ValueError, match=r"CPU_NUM=4.*mpirun -np 4"):
        exe.run(compiled, feed=batch(0), fetch_list=[loss], scope=scope)
    with pytest.raises(ValueError, match="feed list of 2 dicts"):
        monkeypatch.delenv("CPU_NUM")
        exe.run(compiled, feed=[batch(0), batch(1)], fetch_list=[loss],
                scope=scope)


# ---- refused settings and bad arguments ----

def test_customized_gradient_scale_is_refused():
    bs = fluid.BuildStrategy()
    with pytest.raises(ValueError, match="Customized.*fluid.layers.scale"):
        bs.gradient_scale_strategy = \
            fluid.BuildStrategy.GradientScaleStrategy.Customized


def test_refused_and_mistyped_fields():
    bs = fluid.BuildStrategy()
    with pytest.raises(ValueError, match="async_mode.*parameter servers"):
        bs.async_mode = True
    with pytest.raises(AttributeError, match="no attribute 'fuse_everything'"
                       ".*reduce_strategy"):
        bs.fuse_everything = True
    with pytest.raises(TypeError, match="enable_inplace takes a bool, got "
                       "int 1"):
        bs.enable_inplace = 1
    with pytest.raises(ValueError, match="reduce_strategy must be one of"):
        bs.reduce_strategy = "Reduce"
    es = fluid.ExecutionStrategy()
    with pytest.raises(ValueError, match="num_iteration_per_run = 4"):
        es.num_iteration_per_run = 4
    with pytest.raises(ValueError, match="num_threads must be >= 0"):
        es.num_threads = -1


def test_trainers_must_be_the_launchers():
    main, _, loss = build()
    bs = fluid.BuildStrategy()
    bs.num_trainers = 2
    with pytest.raises(ValueError, match=r"num_trainers = 2.*one of 1 "
                       r"rank.*mpirun -np 2"):
        fluid.CompiledProgram(main).with_data_parallel(loss.name,
                                                       build_strategy=bs)
    bs = fluid.BuildStrategy()
    bs.trainer_id = 1
    with pytest.raises(ValueError, match="trainer_id = 1.*rank 0"):
        fluid.CompiledProgram(main).with_data_parallel(loss.name,
                                                       build_strategy=bs)


def test_bad_arguments_name_the_cause():
    main, startup, loss = build()
    with pytest.raises(TypeError, match="takes a fluid.Program"):
        fluid.CompiledProgram("main")
    with pytest.raises(TypeError, match="build_strategy takes a "
                       "fluid.BuildStrategy"):
        fluid.CompiledProgram(main, build_strategy={"reduce": 1})
    with pytest.raises(ValueError, match="loss_name='nope'.*no such"):
        fluid.CompiledProgram(main).with_data_parallel(loss_name="nope")
    with pytest.raises(ValueError, match="minimises"):
        fluid.CompiledProgram(main).with_data_parallel(loss_name="x")
    with pytest.raises(TypeError, match="exec_strategy takes"):
        fluid.CompiledProgram(main).with_data_parallel(
            exec_strategy=fluid.BuildStrategy())
    with pytest.raises(TypeError, match="share_vars_from takes"):
        fluid.CompiledProgram(main).with_data_parallel(
            share_vars_from=main)
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss)
    with pytest.raises(RuntimeError, match="data-parallel already"):
        compiled.with_data_parallel(loss)
    with pytest.raises(NotImplementedError, match="save_inference_model"):
        compiled.with_inference_optimize(None)


def test_a_run_before_the_startup_program_says_so():
    main, _, loss = build()
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss.name)
    # A world of one runs the program as it is: the executor names the
    # parameter nobody initialised.
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(Exception, match="fc_0"):
        exe.run(compiled, feed=batch(0), fetch_list=[loss],
                scope=fluid.Scope())
    with pytest.raises(ValueError, match="run the startup program"):
        fluid.compiler._startup_for(main, fluid.Scope(), None)
